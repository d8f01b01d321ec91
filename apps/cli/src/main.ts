#!/usr/bin/env node
// `baton`: run from source by Node's type stripping, like the other apps.
import { runCli } from './cli.ts'

process.exitCode = await runCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: { BATON_URL: process.env.BATON_URL, BATON_API_KEY: process.env.BATON_API_KEY },
})
