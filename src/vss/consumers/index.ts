/**
 * vss consumers: the write path from the queue (embedding events, EOF markers, real-time events),
 * run by `startVssConsumers`, and the replay of dead letters.
 */

export { ConsumerRunner, type ConsumerRunnerOptions } from './consumer-runner.js';
export {
  type DeadLetter,
  type DeadLetterListing,
  type ListDeadLettersOptions,
  listDeadLetters,
  MAX_LISTED,
} from './dead-letters.js';
export { IngestionProgress } from './ingestion-progress.js';
export {
  type CheckedEvent,
  checkVssEvent,
  type VssEventKind,
  vssEventTopic,
} from './producer-events.js';
export { REPLAY_GROUP, type ReplayOptions, type ReplayReport, replayDeadLetters } from './replay.js';
export { startVssConsumers, type VssConsumers, type VssConsumersOptions } from './vss-consumers.js';
export { type ConsumerSettings, ensureVssTopics, vssTopicOptions, vssTopics } from './vss-topics.js';
