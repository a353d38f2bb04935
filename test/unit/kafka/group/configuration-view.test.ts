import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  configurationView,
  describePeers,
  encodePeerMetadata,
  peerMetadataOf,
  unknownView,
  viewChange,
} from '../../../../src/kafka/group/configuration-view.js';

const { AssignerProtocol } = kafkajs;

function member(userData: Buffer): { memberMetadata: Buffer } {
  return {
    memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics: ['offsets'], userData }),
  };
}

function runs(fingerprint: string, instance: string): { memberMetadata: Buffer } {
  return member(encodePeerMetadata({ fingerprint, instance }));
}

describe('peerMetadataOf', () => {
  it('reads back the fingerprint and the instance name a member put in its metadata', () => {
    const { memberMetadata } = runs('0123456789abcdef', 'host-a:42@2026-01-01T00:00:00.000Z');
    expect(peerMetadataOf(memberMetadata)).toEqual({
      fingerprint: '0123456789abcdef',
      instance: 'host-a:42@2026-01-01T00:00:00.000Z',
    });
  });

  it('reads a later version that adds fields, and names an instance that gives no name "unnamed"', () => {
    const later = member(Buffer.from(JSON.stringify({ v: 2, fingerprint: 'f1', instance: 'a', zone: 'x' })));
    expect(peerMetadataOf(later.memberMetadata)).toEqual({ fingerprint: 'f1', instance: 'a' });
    const nameless = member(Buffer.from(JSON.stringify({ v: 1, fingerprint: 'f1' })));
    expect(peerMetadataOf(nameless.memberMetadata)).toEqual({ fingerprint: 'f1', instance: 'unnamed' });
  });

  it('gives null for metadata it cannot read: none, no user data, not JSON, no fingerprint, a truncated buffer', () => {
    const full = runs('f1', 'a').memberMetadata;
    for (const metadata of [
      null,
      undefined,
      Buffer.alloc(0),
      member(Buffer.alloc(0)).memberMetadata,
      member(Buffer.from('not json')).memberMetadata,
      member(Buffer.from('"a string"')).memberMetadata,
      member(Buffer.from(JSON.stringify({ v: 1, fingerprint: 7, instance: 'a' }))).memberMetadata,
      member(Buffer.from(JSON.stringify({ startedAt: 5 }))).memberMetadata,
      full.subarray(0, full.length - 3),
    ])
      expect(peerMetadataOf(metadata)).toBeNull();
  });
});

describe('configurationView', () => {
  it('is agreed when every member runs this instance fingerprint, naming them', () => {
    const view = configurationView('f1', [runs('f1', 'b'), runs('f1', 'a')]);
    expect(view).toEqual({
      state: 'agreed',
      fingerprint: 'f1',
      peers: [{ fingerprint: 'f1', instances: ['a', 'b'] }],
      unreadable: 0,
    });
  });

  it('differs when two fingerprints run, the one run by more instances first', () => {
    const view = configurationView('f2', [runs('f1', 'a'), runs('f2', 'b'), runs('f1', 'c')]);
    expect(view.state).toBe('differs');
    expect(view.peers).toEqual([
      { fingerprint: 'f1', instances: ['a', 'c'] },
      { fingerprint: 'f2', instances: ['b'] },
    ]);
  });

  it('orders fingerprints run by as many instances by fingerprint, so every instance lists them alike', () => {
    const members = [runs('f9', 'a'), runs('f1', 'b')];
    expect(configurationView('f9', members).peers.map((p) => p.fingerprint)).toEqual(['f1', 'f9']);
    expect(configurationView('f1', [...members].reverse()).peers.map((p) => p.fingerprint)).toEqual([
      'f1',
      'f9',
    ]);
  });

  it('differs when the one fingerprint seen is not this instance (its own member not described yet)', () => {
    expect(configurationView('f2', [runs('f1', 'a')]).state).toBe('differs');
  });

  it('is unknown when unreadable members stand beside members that agree, and differs whatever they are when fingerprints differ', () => {
    const unreadable = member(Buffer.from('?'));
    expect(configurationView('f1', [runs('f1', 'a'), unreadable])).toMatchObject({
      state: 'unknown',
      unreadable: 1,
    });
    expect(configurationView('f1', [runs('f1', 'a'), runs('f2', 'b'), unreadable]).state).toBe('differs');
    expect(configurationView('f1', []).state).toBe('unknown');
  });
});

describe('viewChange', () => {
  const agreed = configurationView('f1', [runs('f1', 'a'), runs('f1', 'b')]);
  const differs = configurationView('f1', [runs('f1', 'a'), runs('f2', 'b')]);

  it('warns when the view turns to differs, naming each fingerprint and its instances', () => {
    const change = viewChange(agreed, differs);
    expect(change?.level).toBe('warn');
    expect(change?.message).toContain('f1 (this instance) on 1: a; f2 on 1: b');
    expect(viewChange(null, differs)?.level).toBe('warn');
  });

  it('says at info when the view agrees again, and nothing for a first agreed view or one that stays as it was', () => {
    expect(viewChange(differs, agreed)).toEqual({
      level: 'info',
      message: 'the instances of this connector run one configuration again (fingerprint f1, 2 instance(s))',
    });
    expect(viewChange(null, agreed)).toBeNull();
    expect(viewChange(agreed, agreed)).toBeNull();
    expect(viewChange(agreed, unknownView('f1'))).toBeNull();
    const moreOfTheSame = configurationView('f1', [runs('f1', 'a'), runs('f2', 'b'), runs('f2', 'c')]);
    expect(viewChange(differs, moreOfTheSame)).toBeNull();
  });

  it('warns again when the fingerprints it differs on change', () => {
    const third = configurationView('f3', [runs('f3', 'a'), runs('f2', 'b')]);
    expect(viewChange(differs, third)?.level).toBe('warn');
    expect(describePeers(third)).toBe('f2 on 1: b; f3 (this instance) on 1: a');
  });
});
