#!/usr/bin/env node
// taskstream-gemini patch [dir] | unpatch [dir] [--force] | status [dir]
import { kitModule } from '../lib/kit.mjs'
import { HOST, patcher } from '../lib/patcher.mjs'

const { runPatchCli } = await kitModule('cli.mjs')
runPatchCli(process.argv.slice(2), HOST, patcher)
