import { changeAwareCache, type AuthChange, type AuthChanges } from '../../src/auth-changes';

/** An in-process stand-in for the NOTIFY listener: `announce` is what a committed change delivers. */
function localChanges() {
  const listeners = new Set<(change: AuthChange) => void>();
  const changes = {
    listening: true,
    subscribe(listener: (change: AuthChange) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async publish() {},
    async close() {},
    announce(change: AuthChange) {
      for (const listener of listeners) listener(change);
    },
  };
  return changes satisfies AuthChanges;
}

const active = { status: 'active' };
const suspended = { status: 'suspended' };

describe('changeAwareCache', () => {
  it('answers a kept value from the cache until a change is announced', async () => {
    const changes = localChanges();
    const cache = changeAwareCache<{ status: string }>(changes, { ttlSeconds: 60, max: 10 });
    let loads = 0;
    const load = async () => (loads++, active);
    const keepActive = (value: { status: string }) => value.status === 'active';
    await expect(cache.get('P1', load, keepActive)).resolves.toBe(active);
    await expect(cache.get('P1', load, keepActive)).resolves.toBe(active);
    expect(loads).toBe(1);
    changes.announce({ partner_id: 'P1' });
    await cache.get('P1', load, keepActive);
    expect(loads).toBe(2);
  });

  it('does not keep what `keep` refuses, nor anything while the process cannot hear changes', async () => {
    const changes = localChanges();
    const cache = changeAwareCache<{ status: string }>(changes, { ttlSeconds: 60, max: 10 });
    let loads = 0;
    await cache.get('P1', async () => (loads++, suspended), (value) => value.status === 'active');
    await cache.get('P1', async () => (loads++, suspended), (value) => value.status === 'active');
    expect(loads).toBe(2);
    changes.listening = false;
    await cache.get('P2', async () => (loads++, active), () => true);
    await cache.get('P2', async () => (loads++, active), () => true);
    expect(loads).toBe(4);
  });

  it('drops a lookup that was running when a change arrived: it may have read the row before the change', async () => {
    const changes = localChanges();
    const cache = changeAwareCache<{ status: string }>(changes, { ttlSeconds: 60, max: 10 });
    let release!: () => void;
    const stale = cache.get('P1', () => new Promise((resolve) => (release = () => resolve(active))), () => true);
    changes.announce({ partner_id: 'P1' });
    release();
    await expect(stale).resolves.toBe(active);
    await expect(cache.get('P1', async () => suspended, () => true)).resolves.toBe(suspended);
  });

  it('looks up every time with ttlSeconds 0', async () => {
    const cache = changeAwareCache<{ status: string }>(localChanges(), { ttlSeconds: 0, max: 10 });
    let loads = 0;
    await cache.get('P1', async () => (loads++, active), () => true);
    await cache.get('P1', async () => (loads++, active), () => true);
    expect(loads).toBe(2);
  });
});
