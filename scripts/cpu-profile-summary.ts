// `node scripts/cpu-profile-summary.ts <file.cpuprofile> [fromUs toUs] [top]`: where a process's
// time went, from a V8 CPU profile (the growth bench writes them with BENCH_CPU_PROFILE_DIR, and
// logs each cancel burst's bounds as `monotonic_us <from> <to>`, the profile's own clock).
import { readFileSync } from 'node:fs'
import { summariseProfile, type CpuProfile } from './lib/bench/cpu-profile.ts'

const [file, from, to, top] = process.argv.slice(2)
if (file === undefined) {
  console.error('usage: node scripts/cpu-profile-summary.ts <file.cpuprofile> [fromUs toUs] [top]')
  process.exit(2)
}
const summary = summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, {
  ...(from === undefined ? {} : { fromUs: Number(from) }),
  ...(to === undefined ? {} : { toUs: Number(to) }),
  ...(top === undefined ? {} : { top: Number(top) }),
})
const busy = summary.sampledMs - summary.idleMs
console.log(`sampled ${summary.sampledMs} ms, idle ${summary.idleMs} ms, busy ${busy} ms`)
for (const [title, rows] of [
  ['self', summary.self],
  ['inclusive', summary.inclusive],
] as const) {
  console.log(`-- ${title}`)
  for (const [name, ms] of rows)
    console.log(
      `${ms.toFixed(0).padStart(7)} ms ${((100 * ms) / busy).toFixed(1).padStart(5)}%  ${name}`,
    )
}
