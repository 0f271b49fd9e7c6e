import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OrderingGate } from '../../../src/vss/consumers/ordering-gate.js';

describe('OrderingGate', () => {
  it('is open when nothing was left unsettled', () => {
    assert.equal(new OrderingGate(40, 0).open, true);
  });

  it('opens once every message left unsettled up to the horizon is back, not on newer ones', () => {
    const gate = new OrderingGate(40, 3);
    assert.equal(gate.open, false);
    gate.received(41); // newer: does not count
    gate.received(12);
    gate.received(12); // the same message twice counts once
    gate.received(30);
    assert.equal(gate.open, false);
    gate.received(40);
    assert.equal(gate.open, true);
  });

  it("opens when the queue counts no unsettled message but the runner's own", () => {
    const gate = new OrderingGate(40, 3);
    gate.observed({ unsettled: 5, ackFloor: 10 }, 4);
    assert.equal(gate.open, false, "one unsettled message is someone else's");
    gate.observed({ unsettled: 4, ackFloor: 10 }, 4);
    assert.equal(gate.open, true);
  });

  it('opens when everything up to the horizon was settled meanwhile', () => {
    const gate = new OrderingGate(40, 3);
    gate.observed({ unsettled: 9, ackFloor: 40 }, 0);
    assert.equal(gate.open, true);
  });
});
