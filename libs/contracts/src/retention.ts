/**
 * How long the ledger keeps a namespace's finished history when the namespace sets no retention
 * of its own (`LEDGER_RETENTION_MS` of the worker, which removes it, and of the API, which shows
 * what is due): 30 days.
 */
export const LEDGER_RETENTION_MS_DEFAULT = 30 * 24 * 60 * 60 * 1000

/**
 * The range of a namespace's own ledger retention as the admin API takes it: at least a minute
 * (a shorter one would remove a child's history while its parent may still read it) and at most
 * ten years.
 */
export const LEDGER_RETENTION_MS_MIN = 60 * 1000
export const LEDGER_RETENTION_MS_MAX = 10 * 366 * 24 * 60 * 60 * 1000
