// Runs npm from a script. Imports only `node:` modules: up uses it before node_modules exists.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'

/**
 * Under `npm run`, npm_execpath is the npm that started us (and maybe not the one on PATH);
 * otherwise npm from PATH.
 */
export function runNpm(
  args: readonly string[],
  cwd: string,
  stdio: 'inherit' | 'pipe' = 'inherit',
): SpawnSyncReturns<Buffer> {
  const npmCli = process.env.npm_execpath
  return npmCli !== undefined && npmCli.endsWith('.js')
    ? spawnSync(process.execPath, [npmCli, ...args], { cwd, stdio })
    : spawnSync('npm', args, { cwd, stdio })
}
