export {
  apiAuthOptions,
  callerAuth,
  grpcServerSettings,
  type LoadedSettings,
  type LoadSettingsOptions,
  loadSettings,
  settingsEnv,
} from './load-settings.js';
export { type Settings, type SettingsInput, settingsSchema } from './schema.js';
export { isSecretSettingName, maskSecrets, maskUrlCredentials, SECRET_MASK } from './secrets.js';
