// The ledger's side of the execution witness: every lease a claim or renewal granted, recorded by
// a trigger as it was granted, and the check that no child ran without a live lease for longer
// than the allowed slack.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '@baton/store'
import type { WitnessedRun } from './witnessed-child.ts'

export interface LeaseGrant {
  /** When the statement that granted it wrote it (wall clock, ms). */
  readonly at: number
  /** Until when it was live (database clock, ms). */
  readonly until: number
}

export interface LeaseLog {
  /** The leases granted to each attempt, oldest first. */
  grants(): Promise<ReadonlyMap<string, readonly LeaseGrant[]>>
  remove(): Promise<void>
}

/** Records every lease granted from now on (a claim, a renewal, an adopted claim). */
export async function recordLeases(db: Db): Promise<LeaseLog> {
  const name = `lease_log_${randomUUID().replaceAll('-', '')}`
  await sql
    .raw(
      `create table ${name} (attempt_id uuid not null, until timestamptz not null,
         at timestamptz not null default clock_timestamp());
       create function ${name}() returns trigger language plpgsql as $$
       begin
         if new.lease_expires_at is not null
            and new.lease_expires_at is distinct from old.lease_expires_at then
           insert into ${name} (attempt_id, until) values (new.id, new.lease_expires_at);
         end if;
         return new;
       end $$;
       create trigger ${name} after update on attempts for each row execute function ${name}();`,
    )
    .execute(db)
  return {
    async grants() {
      const r = await sql<{ attempt_id: string; until: Date; at: Date }>`
        select attempt_id, until, at from ${sql.table(name)} order by at
      `.execute(db)
      const byAttempt = new Map<string, LeaseGrant[]>()
      for (const row of r.rows) {
        const grants = byAttempt.get(row.attempt_id) ?? []
        grants.push({ at: row.at.getTime(), until: row.until.getTime() })
        byAttempt.set(row.attempt_id, grants)
      }
      return byAttempt
    },
    async remove() {
      await sql
        .raw(`drop trigger ${name} on attempts; drop function ${name}(); drop table ${name};`)
        .execute(db)
    },
  }
}

/**
 * The stretches of a run during which its attempt had no lease live for more than `slackMs`: for
 * each moment of the run, some lease granted before that moment must have been live until at
 * least `slackMs` before it. Empty when the run was always covered.
 */
export function uncoveredStretches(
  run: WitnessedRun,
  grants: readonly LeaseGrant[],
  slackMs: number,
): { readonly from: number; readonly to: number }[] {
  const end = run.endedAt ?? Date.now()
  const gaps: { from: number; to: number }[] = []
  let covered = Number.NEGATIVE_INFINITY
  for (const grant of grants) {
    if (grant.at > end) break
    const from = Math.max(covered, run.startedAt)
    if (grant.at > from) gaps.push({ from, to: grant.at })
    covered = Math.max(covered, grant.until + slackMs)
  }
  if (covered < end) gaps.push({ from: Math.max(covered, run.startedAt), to: end })
  return gaps.filter((g) => g.to > g.from)
}
