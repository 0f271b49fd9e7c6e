#!/usr/bin/env node
// The `lattice` command. Sources are TypeScript, loaded through tsx's ESM hooks (no build step).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
