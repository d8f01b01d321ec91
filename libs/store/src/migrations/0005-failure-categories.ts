import { sql, type Kysely } from 'kysely'

/**
 * One failure vocabulary. Before this, the spawn runtime stored a refusal as `refused` (ACP and the
 * worker said `refusal`), the agent runtime said `aborted` where the worker said `cancelled`, and
 * a provider's own category was stored verbatim. This rewrites every stored category into the one
 * durable set of that time: the two old spellings are renamed and anything else outside the set
 * (a provider's free text) becomes `provider_fault`, as the worker maps it from now on.
 *
 * The set is written out here, not imported: a migration must do the same thing whenever it runs,
 * whatever later versions add to the set. Idempotent: a second run finds only known values.
 *
 * Fingerprints stay as committed: they bind what the committer sent, so a commit retried from
 * before the rename is still recognised as `replayed`, and nothing audits them against the columns.
 * Categories inside stored history events (`turn/end`) are left alone too: they are bound into the
 * context digest, and history is replayed to the child, never read as an attempt's outcome.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    update attempts
       set failure_category = case failure_category
             when 'refused' then 'refusal'
             when 'aborted' then 'cancelled'
             else 'provider_fault'
           end
     where failure_category is not null
       and failure_category not in (
         'child_failed', 'process_lost', 'cancelled', 'shutdown', 'provider_fault',
         'unknown_stop_reason', 'context_rejected', 'unknown_subagent', 'store_fault', 'refusal', 'max_tokens',
         'model_error', 'rate_limited', 'auth_failed', 'model_unavailable',
         'model_request_rejected', 'transport_error', 'stream_interrupted', 'max_steps_exceeded',
         'structured_output_missing', 'structured_output_invalid', 'model_config',
         'internal_error', 'max_turn_requests', 'agent_process_exited',
         'agent_connection_closed', 'agent_request_failed'
       )
  `.execute(db)
}
