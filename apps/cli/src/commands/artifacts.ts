import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { writeOutputFile } from '../output-file.ts'
import { renderAnswer } from '../render.ts'

/**
 * `baton artifacts get ID [-o FILE]`: an attempt's complete output, verified against its digest
 * by the client before a byte is written. Without `-o` the bytes go to stdout untouched (and with
 * `--json` nowhere: stdout carries the metadata line).
 */
export async function getArtifact(
  ctx: CommandContext,
  artifactId: string,
  output: string | undefined,
): Promise<ExitCode> {
  const artifact = await ctx.client.readArtifact(artifactId, { timeoutMs: ANSWER_GRACE_MS })
  const file = output === undefined ? null : await writeOutputFile(output, artifact.content)
  if (file === null && !ctx.json) {
    ctx.io.stdout.write(artifact.content)
    return ExitCode.Ok
  }
  const saved = { artifactId, bytes: artifact.content.byteLength, digest: artifact.digest, file }
  ctx.print(saved, () => renderAnswer(saved))
  return ExitCode.Ok
}
