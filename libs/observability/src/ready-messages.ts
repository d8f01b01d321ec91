/**
 * The log lines that say a Baton process is ready for work. Process launchers (tests, bench, chaos,
 * `npm run up`) wait for them, so the app that logs one and every launcher must use the same
 * constant: a reworded log line would otherwise hang every launcher until its timeout.
 */
export const API_READY_MESSAGE = 'api listening'
export const WORKER_READY_MESSAGE = 'worker started'
