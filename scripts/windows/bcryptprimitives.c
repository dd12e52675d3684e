/* Rust's standard library (1.78+) draws randomness from ProcessPrng in
   bcryptprimitives.dll. Wine 8 has no such export, so the Windows tests run
   under Wine with this stand-in beside the test binary: ProcessPrng on top
   of advapi32's SystemFunction036 (RtlGenRandom). Built by
   scripts/test-windows.mjs with mingw-w64; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, chunk)) return FALSE;
    data += chunk;
    length -= chunk;
  }
  return TRUE;
}
