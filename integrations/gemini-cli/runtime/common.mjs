// In the repository: the integrations' shared runtime code. A patch installs ../../kit/runtime-common.mjs
// itself under this name.
export * from '../../kit/runtime-common.mjs'
