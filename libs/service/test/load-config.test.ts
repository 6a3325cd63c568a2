import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { isConfigError, loadConfig, type ConfigError } from '../src/index.js';

const Schema = z.object({
  NATS_URL: z.string().url(),
  NODE_NAME: z.string().min(1),
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  RELIST_PERIOD_MS: z.coerce.number().int().positive().default(1000),
  REGISTRY_PASSWORD: z.string().min(8).optional(),
});

describe('loadConfig', () => {
  it('returns the typed, coerced config with defaults, ignoring unrelated variables', () => {
    const cfg = loadConfig(Schema, { NATS_URL: 'nats://127.0.0.1:4222', NODE_NAME: 'n1', HEALTH_PORT: '8080', PATH: '/bin' });
    assert.deepEqual(cfg, {
      NATS_URL: 'nats://127.0.0.1:4222',
      NODE_NAME: 'n1',
      HEALTH_PORT: 8080,
      LOG_LEVEL: 'info',
      RELIST_PERIOD_MS: 1000,
    });
  });

  it('names every bad variable and why, without values', () => {
    let error: ConfigError | undefined;
    try {
      loadConfig(Schema, { NATS_URL: 'not-a-url', HEALTH_PORT: 'eighty', LOG_LEVEL: 'loud', REGISTRY_PASSWORD: 'hunter2' });
    } catch (e) {
      assert.ok(isConfigError(e));
      error = e;
    }
    assert.ok(error, 'expected a ConfigError');
    assert.equal(error.code, 'InvalidConfig');
    assert.equal(error.retryable, false);
    assert.deepEqual(
      error.issues.map((i) => i.variable),
      ['NATS_URL', 'NODE_NAME', 'HEALTH_PORT', 'LOG_LEVEL', 'REGISTRY_PASSWORD'],
    );
    assert.match(error.message, /^invalid configuration: NATS_URL: .+; NODE_NAME: is required but not set; HEALTH_PORT: .+; LOG_LEVEL: .+; REGISTRY_PASSWORD: .+/);
    assert.doesNotMatch(error.message, /hunter2|eighty|loud/);
  });

  it('treats an empty value as not set', () => {
    assert.throws(() => loadConfig(Schema, { NATS_URL: 'nats://x:1', NODE_NAME: '' }), /NODE_NAME: /);
  });

  it('reports object-level refinements as (config)', () => {
    const S = z.object({ A: z.string().optional(), B: z.string().optional() }).refine((c) => c.A !== undefined || c.B !== undefined, { message: 'set A or B' });
    assert.throws(() => loadConfig(S, {}), /invalid configuration: \(config\): set A or B/);
  });
});
