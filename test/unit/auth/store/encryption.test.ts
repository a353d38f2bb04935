import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { thrown } from '../../../support/auth/thrown.js';
import { describe, expect, it } from 'vitest';
import { StoreKey } from '../../../../src/auth/store/encryption.js';

describe('StoreKey', () => {
  const key = new StoreKey(randomBytes(32));

  it('opens what it sealed for the same entry name', () => {
    const sealed = key.seal('grant:default', Buffer.from('hello'));
    expect(key.open('grant:default', sealed).toString()).toBe('hello');
  });

  it('uses a fresh IV so sealing the same plaintext twice gives different bytes', () => {
    expect(key.seal('n', Buffer.from('x')).equals(key.seal('n', Buffer.from('x')))).toBe(false);
  });

  it('does not contain the plaintext in the sealed bytes', () => {
    const sealed = key.seal('n', Buffer.from('very-secret-refresh-token'));
    expect(sealed.includes(Buffer.from('very-secret'))).toBe(false);
  });

  it('detects a modified byte as tampering', () => {
    const sealed = key.seal('n', Buffer.from('payload'));
    sealed[sealed.length - 1]! ^= 0x01;
    expect(thrown(() => key.open('n', sealed))).toMatchObject({ code: 'AUTH_STORE_TAMPERED' });
  });

  it('detects an entry moved under another name as tampering', () => {
    const sealed = key.seal('grant:a', Buffer.from('payload'));
    expect(thrown(() => key.open('grant:b', sealed))).toMatchObject({ code: 'AUTH_STORE_TAMPERED' });
  });

  it('binds the generation: a value whose generation was raised fails to open', () => {
    const sealed = key.seal('grant:a', Buffer.from('payload'), 3);
    expect(key.openWithGeneration('grant:a', sealed)).toMatchObject({ generation: 3 });
    sealed.writeBigUInt64BE(9n, 9); // version (1) + key id (8) come first
    expect(thrown(() => key.open('grant:a', sealed))).toMatchObject({ code: 'AUTH_STORE_TAMPERED' });
  });

  it('reports a different key as a key mismatch, not as tampering', () => {
    const sealed = key.seal('n', Buffer.from('payload'));
    const other = new StoreKey(randomBytes(32));
    expect(thrown(() => other.open('n', sealed))).toMatchObject({ code: 'AUTH_STORE_KEY_MISMATCH' });
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => new StoreKey(randomBytes(16))).toThrow(TypeError);
  });

  it('never shows the key material when inspected or serialized', () => {
    const raw = randomBytes(32);
    const k = new StoreKey(raw);
    const shown = `${inspect(k)} ${JSON.stringify({ k })}`;
    expect(shown).not.toContain(raw.toString('hex'));
    expect(shown).not.toContain(raw.toString('base64'));
    expect(shown).toContain(k.id);
  });
});
