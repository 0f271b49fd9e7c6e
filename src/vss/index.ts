/**
 * The vss service: serving, consumers and admin, started by `startVss` on a process's platform
 * (settings and adapters). Its layers are model (the domain rules the three share), store (the SQL
 * store), serving, consumers and admin; other services and the CLI reach it here or through its
 * client (client.ts).
 */
export { jobStateStoreOf } from './admin-part.js';
export { type RunningVss, startVss, type VssComponents } from './start-vss.js';
export { openProductionVectorDb } from './vss-adapters.js';
