export {
  callerAuth,
  type LoadedSettings,
  type LoadSettingsOptions,
  loadSettings,
  settingsEnv,
} from './load-settings.js';
export { type Settings, type SettingsInput, settingsSchema } from './schema.js';
