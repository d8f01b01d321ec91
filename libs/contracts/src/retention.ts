/**
 * How long the ledger keeps a namespace's finished history when the namespace sets no retention
 * of its own (`LEDGER_RETENTION_MS` of the worker, which removes it, and of the API, which shows
 * what is due): 30 days.
 */
export const LEDGER_RETENTION_MS_DEFAULT = 30 * 24 * 60 * 60 * 1000
