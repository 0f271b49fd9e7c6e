/**
 * `lattice vss register-store | register-model | register-variant | reset | trigger | promote |
 * retry | status | models`: thin clients of the vss admin HTTP API (vss.md "Admin HTTP API").
 */
export { AdminApiError, AdminClient, AdminUnreachableError } from './admin-client.js';
