import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ephemeralPortRange, freePort, portsOutside } from '../src/free-port.js';

describe('freePort', () => {
  it('reads the kernel ephemeral range, and nothing from a file that is missing or malformed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'free-port-'));
    try {
      const file = join(dir, 'range');
      writeFileSync(file, '32768\t60999\n');
      assert.deepEqual(ephemeralPortRange(file), { low: 32768, high: 60999 });
      writeFileSync(file, '60999 32768\n');
      assert.equal(ephemeralPortRange(file), undefined);
      writeFileSync(file, 'many\n');
      assert.equal(ephemeralPortRange(file), undefined);
      assert.equal(ephemeralPortRange(join(dir, 'absent')), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('chooses below the ephemeral range from 10,000, else above it, else lets the kernel pick', () => {
    assert.deepEqual(portsOutside({ low: 32768, high: 60999 }), { from: 10_000, to: 32767 });
    assert.deepEqual(portsOutside({ low: 1024, high: 40000 }), { from: 40001, to: 65535 });
    assert.equal(portsOutside({ low: 1024, high: 65000 }), undefined);
  });

  it('returns a loopback port outside the ephemeral range that a server can bind', async () => {
    const range = ephemeralPortRange();
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      if (range !== undefined && portsOutside(range) !== undefined)
        assert.ok(port < range.low || port > range.high, `${port} is in the ephemeral range ${range.low}-${range.high}`);
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', resolve);
      });
      await new Promise((r) => server.close(r));
    }
  });
});
