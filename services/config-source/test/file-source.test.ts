import assert from 'node:assert/strict';
import { mkdir, open, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { realClock } from '@splitlet/service';
import { FakeClock } from '@splitlet/service/testing';
import { eventually, makeTempDir, type TempDir } from '@splitlet/testkit';
import { FileSource, listManifests, readManifestFile, type FileSourceOptions } from '../src/sources/file-source.js';
import type { SourceListing } from '../src/sources/listing.js';
import { MAX_CONFIG_LENGTH } from '../src/sources/manifest-decoder.js';
import { manifest, memoryLogger } from './helpers.js';

const NODE = 'node-a';

describe('listManifests', () => {
  let tmp: TempDir;
  beforeEach(async () => {
    tmp = await makeTempDir('cs-file-');
  });
  afterEach(async () => tmp.cleanup());

  it('reads regular files sorted, skipping dotfiles and subdirectories', async () => {
    await writeFile(join(tmp.path, 'b.yaml'), manifest('b'));
    await writeFile(join(tmp.path, 'a.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a' }, spec: { containers: [{ name: 'c', image: 'i' }] } }));
    await writeFile(join(tmp.path, '.hidden.yaml'), manifest('hidden'));
    await writeFile(join(tmp.path, '.swp'), 'garbage: [');
    await mkdir(join(tmp.path, 'sub'));
    await writeFile(join(tmp.path, 'sub', 'c.yaml'), manifest('c'));
    const l = await listManifests(tmp.path, NODE);
    assert.equal(l.missing, false);
    assert.deepEqual(
      l.pods.map((p) => [p.pod.metadata.name, p.origin]),
      [
        ['a-node-a', join(tmp.path, 'a.json')],
        ['b-node-a', join(tmp.path, 'b.yaml')],
      ],
    );
    assert.deepEqual(l.errors, []);
    assert.deepEqual(l.skipped, [{ path: join(tmp.path, 'sub'), reason: 'not recursing into manifest path' }]);
  });

  it('with a cache, an unchanged file gives the same pod objects; a rewrite of the same size is seen', async () => {
    const file = join(tmp.path, 'a.yaml');
    await writeFile(file, manifest('a', 'busybox:1.36'));
    const cache = new Map() as Parameters<typeof listManifests>[2] & object;
    const first = await listManifests(tmp.path, NODE, cache);
    const again = await listManifests(tmp.path, NODE, cache);
    assert.equal(again.pods[0]!.pod, first.pods[0]!.pod, 'the same object: not decoded again');
    // Rewritten at once with content of the same length: the file times may not move, the text does.
    await writeFile(file, manifest('a', 'busybox:1.37'));
    const changed = await listManifests(tmp.path, NODE, cache);
    assert.equal(changed.pods[0]!.pod.spec.containers[0]!.image, 'busybox:1.37');
    await rm(file);
    assert.deepEqual((await listManifests(tmp.path, NODE, cache)).pods, []);
    assert.equal(cache.size, 0, 'entries of removed files are dropped');
  });

  it('multi-document files and PodLists contribute several pods', async () => {
    await writeFile(join(tmp.path, 'multi.yaml'), `${manifest('x')}---\n${manifest('y')}`);
    await writeFile(join(tmp.path, 'list.yaml'), `apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: z}\n  spec: {containers: [{name: c, image: i}]}\n`);
    const l = await listManifests(tmp.path, NODE);
    assert.deepEqual(
      l.pods.map((p) => p.pod.metadata.name),
      ['z-node-a', 'x-node-a', 'y-node-a'],
    );
  });

  it('a bad file is an error naming it; the other files still count', async () => {
    await writeFile(join(tmp.path, 'good.yaml'), manifest('good'));
    await writeFile(join(tmp.path, 'noname.yaml'), manifest('x').replace('  name: x\n', ''));
    await writeFile(join(tmp.path, 'kind.yaml'), 'apiVersion: apps/v1\nkind: Deployment\n');
    await writeFile(join(tmp.path, 'broken.yaml'), 'a: [\n');
    const l = await listManifests(tmp.path, NODE);
    assert.deepEqual(
      l.pods.map((p) => p.pod.metadata.name),
      ['good-node-a'],
    );
    assert.deepEqual(
      l.errors.map((e) => e.location),
      ['broken.yaml', 'kind.yaml', 'noname.yaml'].map((f) => join(tmp.path, f)),
    );
    assert.match(l.errors[0]!.message, /^error converting YAML to JSON/);
    assert.match(l.errors[1]!.message, /unsupported kind "Deployment"/);
    assert.equal(l.errors[2]!.message, 'invalid pod: name is needed for the pod');
  });

  it('a file over 10 MiB is an error naming the file and its size, without reading it', async () => {
    const big = join(tmp.path, 'big.yaml');
    const fh = await open(big, 'w');
    await fh.truncate(MAX_CONFIG_LENGTH + 1); // sparse: no data written
    await fh.close();
    await writeFile(join(tmp.path, 'ok.yaml'), manifest('ok'));
    const l = await listManifests(tmp.path, NODE);
    assert.deepEqual(
      l.pods.map((p) => p.pod.metadata.name),
      ['ok-node-a'],
    );
    assert.equal(l.errors.length, 1);
    assert.equal(l.errors[0]!.location, big);
    assert.equal(l.errors[0]!.message, `manifest file ${JSON.stringify(big)} is 10485761 bytes, larger than the limit of 10485760 bytes (maxConfigLength)`);
  });

  it('exactly 10 MiB is read', async () => {
    const p = join(tmp.path, 'edge.yaml');
    const text = manifest('edge');
    await writeFile(p, text + ' '.repeat(MAX_CONFIG_LENGTH - Buffer.byteLength(text)));
    assert.equal((await readManifestFile(p)).length, MAX_CONFIG_LENGTH);
  });

  it('a missing path is "missing"; an empty dir has no pods', async () => {
    assert.equal((await listManifests(join(tmp.path, 'nope'), NODE)).missing, true);
    const l = await listManifests(tmp.path, NODE);
    assert.deepEqual([l.missing, l.pods, l.errors], [false, [], []]);
  });

  it('the path may be a single manifest file', async () => {
    const p = join(tmp.path, 'one.yaml');
    await writeFile(p, manifest('one'));
    assert.deepEqual(
      (await listManifests(p, NODE)).pods.map((x) => x.pod.metadata.name),
      ['one-node-a'],
    );
  });

  it('a dangling symlink is skipped, a symlink to a file is read', async () => {
    await writeFile(join(tmp.path, 'real.yaml'), manifest('real'));
    await mkdir(join(tmp.path, '.store'));
    await writeFile(join(tmp.path, '.store', 'target.yaml'), manifest('linked'));
    await symlink(join(tmp.path, '.store', 'target.yaml'), join(tmp.path, 'link.yaml'));
    await symlink(join(tmp.path, 'gone'), join(tmp.path, 'dangling.yaml'));
    const l = await listManifests(tmp.path, NODE);
    assert.deepEqual(
      l.pods.map((p) => p.pod.metadata.name),
      ['linked-node-a', 'real-node-a'],
    );
    assert.equal(l.skipped.length, 1);
  });
});

describe('FileSource loop', () => {
  let tmp: TempDir;
  beforeEach(async () => {
    tmp = await makeTempDir('cs-loop-');
  });
  afterEach(async () => tmp.cleanup());

  /**
   * Runs a FileSource on the test's directory (10 min period, the real clock, unless `o` says
   * otherwise), collecting every listing it hands on; `stop` aborts it and waits for its end.
   */
  const startSource = (o: Partial<FileSourceOptions> = {}): { listings: SourceListing[]; stop: () => Promise<void> } => {
    const listings: SourceListing[] = [];
    const src = new FileSource({
      path: tmp.path,
      nodeName: NODE,
      periodMs: 600_000,
      clock: realClock,
      logger: memoryLogger().logger,
      onListing: async (l) => void listings.push(l),
      ...o,
    });
    const ac = new AbortController();
    const done = src.run(ac.signal);
    return {
      listings,
      stop: async () => {
        ac.abort();
        await done;
      },
    };
  };

  it('lists at start and every period (fake clock), sending SET [] for a missing dir', async () => {
    const clock = new FakeClock(0);
    let progress = 0;
    const { listings, stop } = startSource({ path: join(tmp.path, 'manifests'), periodMs: 20_000, watch: false, clock, onProgress: () => progress++ });
    await eventually(() => listings.length === 1);
    assert.deepEqual(listings[0], { source: 'file', pods: [], errors: [] });
    await mkdir(join(tmp.path, 'manifests'));
    await writeFile(join(tmp.path, 'manifests', 'a.yaml'), manifest('a'));
    clock.advance(19_999);
    assert.equal(listings.length, 1);
    clock.advance(1);
    await eventually(() => listings.length === 2);
    assert.deepEqual(
      listings[1]?.pods?.map((p) => p.pod.metadata.name),
      ['a-node-a'],
    );
    assert.equal(progress, 2);
    await stop();
    assert.equal(clock.pendingTimers, 0);
  });

  it('relists on inotify events (add, modify, delete) well before the period', async () => {
    // The period (10 min) never elapses within the test: only watch events cause relists.
    const { listings, stop } = startSource();
    await eventually(() => listings.length === 1);
    const names = (): string[] => listings.at(-1)?.pods?.map((p) => p.pod.metadata.name) ?? [];
    await writeFile(join(tmp.path, 'a.yaml'), manifest('a'));
    await eventually(() => names().join() === 'a-node-a', { timeoutMs: 5000 });
    await writeFile(join(tmp.path, 'a.yaml'), manifest('a', 'busybox:1.37'));
    await eventually(() => listings.at(-1)?.pods?.[0]?.pod.spec.containers[0]?.image === 'busybox:1.37', { timeoutMs: 5000 });
    await rm(join(tmp.path, 'a.yaml'));
    await eventually(() => names().length === 0, { timeoutMs: 5000 });
    await stop();
  });

  it('a watch event looks at the entries it names alone: the listing says what changed and equals a full listing', async () => {
    for (let i = 0; i < 20; i += 2) await writeFile(join(tmp.path, `p${String(i).padStart(2, '0')}.yaml`), manifest(`p${i}`));
    await writeFile(join(tmp.path, 'zz-bad.yaml'), 'kind: Pod\nspec: {}\n');
    const { listings, stop } = startSource();
    try {
      const first = await eventually(() => listings[0]);
      assert.equal(first.changes, undefined, 'the first look is a full listing');
      assert.equal(first.pods?.length, 10);
      const full = async (): Promise<unknown> => {
        const l = await listManifests(tmp.path, NODE);
        return { names: l.pods.map((p) => p.pod.metadata.name), errors: l.errors };
      };
      const seen = (l: SourceListing): unknown => ({ names: l.pods?.map((p) => p.pod.metadata.name), errors: l.errors });

      // A new file between the others: one pod upserted, the rest the very objects of the last look.
      await writeFile(join(tmp.path, 'p05.yaml'), manifest('p5'));
      let l = await eventually(() => (listings.at(-1)?.pods?.length === 11 ? listings.at(-1) : undefined), { timeoutMs: 5000 });
      assert.deepEqual(
        l.changes?.upserted.map((p) => p.pod.metadata.name),
        ['p5-node-a'],
      );
      assert.deepEqual(l.changes?.removed, []);
      assert.deepEqual(seen(l), await full(), 'in sorted order, with the bad file still in error');
      for (const p of first.pods)
        assert.ok(
          l.pods!.some((q) => q.pod === p.pod),
          `${p.pod.metadata.name} is the object of the first look`,
        );
      assert.equal(l.errors.length, 1);

      // A changed file: its pod upserted (a new object); a removed one: its UID removed.
      let n = listings.length;
      await writeFile(join(tmp.path, 'p02.yaml'), manifest('p2', 'busybox:1.37'));
      l = await eventually(() => listings.slice(n).find((x) => x.pods?.some((p) => p.pod.metadata.name === 'p2-node-a' && p.pod.spec.containers[0]?.image === 'busybox:1.37')), {
        timeoutMs: 5000,
      });
      assert.deepEqual(
        l.changes?.upserted.map((p) => p.pod.metadata.name),
        ['p2-node-a'],
      );
      const uid = first.pods.find((p) => p.pod.metadata.name === 'p4-node-a')!.pod.metadata.uid;
      n = listings.length;
      await rm(join(tmp.path, 'p04.yaml'));
      l = await eventually(() => listings.slice(n).find((x) => !x.pods?.some((p) => p.pod.metadata.name === 'p4-node-a')), { timeoutMs: 5000 });
      assert.deepEqual(l.changes, { upserted: [], removed: [uid] });
      assert.deepEqual(seen(l), await full());
    } finally {
      await stop();
    }
  });

  it('the full relist comes a period after the last one, however many watch events came between', async () => {
    const clock = new FakeClock(0);
    const { listings, stop } = startSource({ periodMs: 20_000, clock });
    try {
      await eventually(() => listings.length === 1);
      clock.advance(10_000);
      await writeFile(join(tmp.path, 'a.yaml'), manifest('a'));
      // The event arrives in real time; the debounce runs on the fake clock.
      const partial = await eventually(
        () => {
          if (listings.length === 1) clock.advance(5);
          return listings.at(-1)?.pods?.length === 1 ? listings.at(-1) : undefined;
        },
        { timeoutMs: 5000 },
      );
      assert.ok(partial.changes !== undefined, 'a watch event is looked at alone');
      const n = listings.length;
      clock.advance(20_000 - clock.now() - 1);
      assert.equal(listings.length, n, 'not before the period');
      clock.advance(1);
      const relisted = await eventually(() => listings[n]);
      assert.equal(relisted.changes, undefined, 'a full relist at 20 s, not a period after the watch event');
    } finally {
      await stop();
    }
  });

  it('a directory that keeps changing cannot hold relists off, and a burst of writes costs few relists', async () => {
    const { listings, stop } = startSource({ debounceMs: 20 });
    let writing = true;
    let writer: Promise<void> = Promise.resolve();
    try {
      await eventually(() => listings.length === 1);
      // A writer touching a file every 5 ms for 1.5 s: the watch never goes quiet.
      writer = (async () => {
        for (let i = 0; writing; i++) {
          await writeFile(join(tmp.path, 'busy.yaml'), manifest('busy', `busybox:1.${i}`));
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      await new Promise((r) => setTimeout(r, 1500));
      const seenWhileWriting = listings.length - 1;
      writing = false;
      await writer;
      assert.ok(seenWhileWriting >= 1, 'relists happened while the directory kept changing');
      // 200 manifests written back to back.
      const before = listings.length;
      for (let i = 0; i < 200; i++) await writeFile(join(tmp.path, `p${i}.yaml`), manifest(`p${i}`));
      await eventually(() => (listings.at(-1)?.pods?.length ?? 0) === 201, { timeoutMs: 10_000 });
      assert.ok(listings.length - before < 100, `${listings.length - before} relists for 200 files`);
    } finally {
      writing = false;
      await writer;
      await stop();
    }
  });
});
