/* napi-build links a windows-gnu build against libnode.dll. taskstream
   resolves every Node symbol at load time (napi's dyn-symbols), so any DLL
   of that name satisfies the linker: this empty one. Never shipped. */
int taskstream_libnode_placeholder;
