#!/usr/bin/env node
// taskstream-qwen patch [dir] | unpatch [dir] [--force] | status [dir]
import { runPatchCli } from '../../kit/cli.mjs'
import { HOST, patcher } from '../lib/patcher.mjs'

runPatchCli(process.argv.slice(2), HOST, patcher)
