// What a run leaves: one table for a reader, one JSON line for a machine, and that line appended to
// `bench-results/runs.jsonl` (git-ignored) with the commit, date and options it was measured with.
import { execFileSync } from 'node:child_process'
import { appendFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from '../services.ts'
import type { BenchOptions, ScaleOptions, SystemName } from './options.ts'
import type { ScaleFigures, ScaleResult } from './scale.ts'
import { METRICS, RATIOS, type Metric, type RoundFigures, type Summary } from './rounds.ts'
import type { Spread } from './stats.ts'

const TITLES: Record<SystemName, string> = {
  raw: 'raw BullMQ',
  naive: 'hand-rolled',
  baton: 'Baton',
}

/** The commit measured, marked `-dirty` when the work tree had changes. */
function gitCommit(): string {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim()
  try {
    return (
      git('rev-parse', '--short=12', 'HEAD') + (git('status', '--porcelain') === '' ? '' : '-dirty')
    )
  } catch {
    return 'unknown'
  }
}

export function benchRecord(
  options: BenchOptions,
  summary: Summary,
  runs: readonly RoundFigures[],
): Record<string, unknown> {
  const { json: _json, ...sizes } = options
  return {
    commit: gitCommit(),
    date: new Date().toISOString(),
    options: sizes,
    ...summary.medians,
    ...summary.ratios,
    ...hostedRecord(summary),
    rounds: runs,
  }
}

/** Baton's hosted turns (hosted-turns.ts) under their own key, when Baton was measured. */
function hostedRecord(summary: Summary): Record<string, unknown> {
  const baton = summary.medians.baton
  if (baton?.hosted_turns === undefined) return {}
  return {
    hosted: {
      turn_p50_ms: baton.hosted_turn_p50_ms,
      turn_p99_ms: baton.hosted_turn_p99_ms,
      turns: baton.hosted_turns,
    },
  }
}

export function saveRecord(line: string): string {
  const dir = join(REPO_ROOT, 'bench-results')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, 'runs.jsonl')
  appendFileSync(file, `${line}\n`)
  return file
}

/** Columns padded to their widest cell, as a Markdown table. */
function markdownTable(rows: readonly (readonly string[])[], rightAligned: number): string[] {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => r[c]?.length ?? 0))) ?? []
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, c) => (c > 0 && c <= rightAligned ? cell.padStart(widths[c] ?? 0) : cell.padEnd(widths[c] ?? 0))).join(' | ')} |`
  const rule = widths.map((w, c) =>
    c > 0 && c <= rightAligned ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2),
  )
  return [line(rows[0] ?? []), `|${rule.join('|')}|`, ...rows.slice(1).map(line)]
}

export function summaryTable(options: BenchOptions, summary: Summary): string[] {
  const ratios = (Object.keys(RATIOS) as (keyof typeof RATIOS)[]).filter(
    (name) => summary.ratios[name] !== undefined,
  )
  const ratioCell = (s: Spread | undefined) =>
    s === undefined ? '–' : options.rounds === 1 ? `${s.median}` : `${s.median} (${s.min}–${s.max})`
  const header = [
    `median of ${summary.rounds} round${summary.rounds === 1 ? '' : 's'}`,
    ...options.systems.map((system) => TITLES[system]),
    ...ratios.map((name) => `Baton ÷ ${TITLES[RATIOS[name]]}`),
  ]
  const rows = (Object.keys(METRICS) as Metric[])
    .filter((metric) => options.systems.some((s) => summary.medians[s]?.[metric] !== undefined))
    .map((metric) => [
      METRICS[metric].label,
      ...options.systems.map((s) => String(summary.medians[s]?.[metric] ?? '–')),
      ...ratios.map((name) => ratioCell(summary.ratios[name]?.[metric])),
    ])
  const note =
    ratios.length > 0 && options.rounds > 1
      ? ['Each ratio is taken within a round: its median over the rounds (lowest–highest).']
      : []
  return [...markdownTable([header, ...rows], options.systems.length), ...note]
}

/** A growth run's JSON line: the commit, date and options, then each dimension's rows. */
export function scaleRecord(options: ScaleOptions, result: ScaleResult): Record<string, unknown> {
  const { json: _json, ...sizes } = options
  return {
    kind: 'scale',
    commit: gitCommit(),
    date: new Date().toISOString(),
    options: sizes,
    ...result,
  }
}

/** One Markdown table per measured dimension: a row per level, a column per figure. */
export function scaleTables(result: ScaleResult): string[] {
  return (Object.entries(result) as [string, readonly ScaleFigures[]][]).flatMap(([name, rows]) => {
    const first = rows[0]
    if (first === undefined) return []
    const columns = Object.keys(first)
    const cells = [columns, ...rows.map((row) => columns.map((c) => String(row[c] ?? '–')))]
    return [`${name}:`, ...markdownTable(cells, columns.length - 1), '']
  })
}
