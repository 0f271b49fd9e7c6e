export {
  type ConsoleOptions,
  type ConsoleParts,
  DEFAULT_CONSOLE_ROOT,
  PARTS_PATH,
  registerConsole,
} from './serve-console.js';
export { registerVssAdminProxy, VSS_ADMIN_PREFIX, type VssAdminProxyOptions } from './vss-admin-proxy.js';
