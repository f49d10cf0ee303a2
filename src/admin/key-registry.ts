/**
 * Which data keys the database's sealed secrets need, and re-sealing them under a new key (docs/security.md
 * "Keys"). Sealed columns: `merchants.hmac_secret_encrypted`, `merchants.previous_hmac_secret_encrypted` and
 * `instruments.number_encrypted`.
 *
 * Start-up (`verifyDataKeys`): the process registers its current key, then refuses to run when a registered key is
 * missing from PLATFORM_KEY_DIR or the directory holds another key under its id. A key directory is never
 * regenerated silently: a fresh one against a database with secrets stops here with one line naming the key.
 *
 * Rotation (`rotateDataKey`): a new key is added to the directory, registered, made current, and every secret not
 * under it is re-sealed in batches of 500 rows, each batch one transaction with its rows locked. Re-running it after
 * an interruption finishes the job.
 */
import type { Knex } from '../db/knex';
import { hmacContext, previousHmacContext } from '../onboarding/merchants';
import { numberContext } from '../instruments/store';
import { isCurrent, keyIdOf, LEGACY_DATA_KEY_ID, openSecret, sealSecret, type DataKeyring } from '../crypto/data-keys';
import { createDataKey, keyFingerprint, KeyFileError, makeDataKeyCurrent, readDataKeyring } from '../crypto/platform-keys';

/** The sealed columns: table, key column, sealed column, associated data of a row. */
const SEALED_COLUMNS = [
  { table: 'merchants', key: 'id', column: 'hmac_secret_encrypted', context: (id: string) => hmacContext(id) },
  // The secret a rotation replaced, while its overlap lasts (null otherwise: never selected).
  { table: 'merchants', key: 'id', column: 'previous_hmac_secret_encrypted', context: (id: string) => previousHmacContext(id) },
  { table: 'instruments', key: 'token', column: 'number_encrypted', context: (token: string) => numberContext(token) },
] as const;

const BATCH_ROWS = 500;

async function register(database: Knex, id: string, key: Buffer): Promise<void> {
  await database('data_keys').insert({ id, fingerprint: keyFingerprint(key) }).onConflict('id').ignore();
}

/** Opens one `k0` secret with the directory's `k0`: proves it is the key the legacy secrets were sealed under. */
async function legacyKeyOpens(database: Knex, ring: DataKeyring): Promise<boolean> {
  for (const sealed of SEALED_COLUMNS) {
    const row = (await database(sealed.table).where(sealed.column, 'like', 'v1.%').first(sealed.key, sealed.column)) as Record<string, string> | undefined;
    if (!row) continue;
    try {
      openSecret(ring, row[sealed.column]!, sealed.context(row[sealed.key]!));
      return true;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Registers the current key and checks every registered one against the key directory.
 * @throws KeyFileError naming the first missing or different key
 */
export async function verifyDataKeys(database: Knex, ring: DataKeyring): Promise<void> {
  await register(database, ring.currentId, ring.current);
  const rows = (await database('data_keys').select('id', 'fingerprint')) as Array<{ id: string; fingerprint: string | null }>;
  for (const row of rows) {
    const key = ring.keys.get(row.id) ?? ring.lookup?.(row.id);
    if (!key) throw new KeyFileError(`PLATFORM_KEY_DIR lacks data key ${row.id}, under which the database holds sealed secrets: restore the key directory (keys are never regenerated)`);
    if (row.fingerprint === null && row.id === LEGACY_DATA_KEY_ID) {
      if (!(await legacyKeyOpens(database, ring))) throw new KeyFileError(`PLATFORM_KEY_DIR data key ${row.id} does not open the database's sealed secrets: restore the key directory`);
      await database('data_keys').where({ id: row.id }).update({ fingerprint: keyFingerprint(key) });
    } else if (row.fingerprint !== keyFingerprint(key)) {
      throw new KeyFileError(`PLATFORM_KEY_DIR holds another data key under id ${row.id} than the one the database's secrets are sealed under: restore the key directory`);
    }
  }
}

export interface RotationReport {
  key_id: string;
  /** Rows re-sealed under the new key, per table. */
  resealed: Record<string, number>;
}

/**
 * Adds a data key to `directory`, registers it, then makes it current and re-seals every secret under it
 * (`resealAll`). Registered before any process can seal under it, so the registry always names every key a
 * ciphertext in the database may carry.
 * @returns the new key's id and the rows re-sealed
 */
export async function rotateDataKey(database: Knex, directory: string): Promise<RotationReport> {
  const id = createDataKey(directory);
  await register(database, id, readDataKeyring(directory).keys.get(id)!);
  makeDataKeyCurrent(directory, id);
  return { key_id: id, resealed: await resealAll(database, readDataKeyring(directory)) };
}

/**
 * Whether start-up may create missing key files: only on a first start, when the database holds no registered
 * data key, no partner and no merchant. Anything else means keys exist somewhere and a directory lacking one is a
 * lost or wrong mount, never a reason to make new keys.
 * @throws KeyFileError when the database cannot be reached or is not migrated (a first start cannot be told from a
 *         lost key directory then)
 */
export async function keysMayBeCreated(database: Knex): Promise<boolean> {
  try {
    const found = await database.raw(`
      SELECT EXISTS (SELECT 1 FROM data_keys) OR EXISTS (SELECT 1 FROM partners) OR EXISTS (SELECT 1 FROM merchants) AS started
    `);
    return !(found.rows[0] as { started: boolean }).started;
  } catch (error) {
    throw new KeyFileError(
      `PLATFORM_KEY_DIR lacks key files and the database cannot tell a first start from a lost key directory (${(error as Error).message}): start again once it answers and is migrated`,
    );
  }
}

/** Re-seals every secret not under the ring's current key, in locked batches. Idempotent. */
export async function resealAll(database: Knex, ring: DataKeyring): Promise<Record<string, number>> {
  const resealed: Record<string, number> = {};
  for (const sealed of SEALED_COLUMNS) {
    resealed[sealed.table] ??= 0;
    for (;;) {
      const { selected, changed } = await database.transaction(async (trx) => {
        const rows = (await trx(sealed.table)
          .whereNot(sealed.column, 'like', `v2.${ring.currentId}.%`)
          .orderBy(sealed.key)
          .limit(BATCH_ROWS)
          .forUpdate()
          .skipLocked()
          .select(sealed.key, sealed.column)) as Array<Record<string, string>>;
        let count = 0;
        for (const row of rows) {
          const context = sealed.context(row[sealed.key]!);
          const value = row[sealed.column]!;
          if (isCurrent(ring, value) || keyIdOf(value) === undefined) continue;
          await trx(sealed.table)
            .where(sealed.key, row[sealed.key]!)
            .update({ [sealed.column]: sealSecret(ring, openSecret(ring, value, context), context) });
          count += 1;
        }
        return { selected: rows.length, changed: count };
      });
      resealed[sealed.table]! += changed;
      // A short batch is the last; a batch that changed nothing holds only rows that cannot be re-sealed.
      if (selected < BATCH_ROWS || changed === 0) break;
    }
  }
  return resealed;
}
