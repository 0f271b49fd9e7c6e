/**
 * `lattice vss register-store | register-model | register-variant | reset | trigger | promote |
 * retry | status | models`: thin clients of the vss admin HTTP API (vss.md "Admin HTTP API").
 */
export { AdminApiError, AdminClient, AdminUnreachableError } from './admin-client.js';
export type { VssAdminIo } from './command-context.js';
export { runVssAdminCommand, VSS_ADMIN_SUBCOMMANDS, type VssAdminSettings } from './run-command.js';
export { VSS_ADMIN_USAGE } from './usage.js';
