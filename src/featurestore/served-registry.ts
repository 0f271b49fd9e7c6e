/**
 * The registry a running feature store serves, which FeatureWriterService.RegisterEntities can
 * extend while it runs: a load into `lattice up` brings its entity's definition along. Registrations
 * run one at a time; an added entity is kept (`keep`) before it is served, so a restart serves it too.
 */

import type { FeatureRegistry } from './registry.js';
import type { EntityDocument } from './registry-schema.js';

export interface Registration {
  added: string[];
  unchanged: string[];
}

export class ServedRegistry {
  #current: FeatureRegistry;
  #queue: Promise<unknown> = Promise.resolve();

  /** `keep` stores the definitions of added entities (none: they last as long as the process). */
  constructor(
    initial: FeatureRegistry,
    private readonly keep?: (name: string, definition: EntityDocument) => Promise<void>,
  ) {
    this.#current = initial;
  }

  get current(): FeatureRegistry {
    return this.#current;
  }

  /** Adds the entities of `document`; an entity registered already must be defined identically. */
  register(document: unknown, source = 'registry document'): Promise<Registration> {
    const next = this.#queue.then(async () => {
      const { registry, added, unchanged } = this.#current.withEntities(document, source);
      if (this.keep) {
        for (const name of added) {
          const definition = registry.toDocument().entities.find((entity) => entity.name === name)!;
          await this.keep(name, definition);
        }
      }
      this.#current = registry;
      return { added, unchanged };
    });
    this.#queue = next.catch(() => undefined);
    return next;
  }
}
