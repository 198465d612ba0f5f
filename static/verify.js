//! Vigie public verification: recomputes, in the visitor's browser with WebCrypto, the seed commitment and every die, deal, duel and automatic selection of the game from its revealed seed, then compares them with the log and with our server's values. It trusts no value the server derived; the list of draws and their logged values are those the server read from the log, which the page cannot see.
(function () {
  'use strict';

  var box = document.getElementById('browser-check');
  if (!box) { return; }
  var verdictEl = document.getElementById('browser-verdict');
  var detailEl = document.getElementById('browser-detail');

  function finish(state, verdict, text) {
    verdictEl.setAttribute('data-state', state);
    verdictEl.setAttribute('data-verdict', verdict);
    verdictEl.textContent = verdict;
    detailEl.textContent = text;
  }

  if (!window.crypto || !window.crypto.subtle || !window.TextEncoder) {
    finish('unsupported', 'unavailable', 'This browser has no WebCrypto here (it needs a secure context: https or localhost). The commands below check the same by hand.');
    return;
  }

  var enc = new TextEncoder();
  var subtle = window.crypto.subtle;

  function hex(buf) {
    var b = new Uint8Array(buf), s = '';
    for (var i = 0; i < b.length; i++) { s += (b[i] < 16 ? '0' : '') + b[i].toString(16); }
    return s;
  }

  // block(msg) = HMAC-SHA256(key = ASCII hex seed, msg), 32 bytes.
  function Blocks(key) { this.key = key; }
  Blocks.prototype.get = function (msg) {
    return subtle.sign('HMAC', this.key, enc.encode(msg)).then(function (b) { return new Uint8Array(b); });
  };

  // A stream PREFIX: block("PREFIX:0") || block("PREFIX:1") || ..., read as 4-byte big-endian integers.
  function Stream(blocks, prefix) { this.blocks = blocks; this.prefix = prefix; this.next = 0; this.buf = null; this.pos = 32; }
  Stream.prototype.u32 = async function () {
    if (this.pos + 4 > 32) {
      this.buf = await this.blocks.get(this.prefix + ':' + this.next);
      this.next += 1;
      this.pos = 0;
    }
    var b = this.buf, p = this.pos;
    this.pos += 4;
    return ((b[p] << 24) >>> 0) + (b[p + 1] << 16) + (b[p + 2] << 8) + b[p + 3];
  };
  // below(n): rejection sampling without modulo bias.
  Stream.prototype.below = async function (n) {
    var limit = Math.floor(4294967296 / n) * n;
    for (;;) {
      var v = await this.u32();
      if (v < limit) { return v % n; }
    }
  };

  async function die(blocks, game, n) {
    for (var k = 0; ; k++) {
      var b = await blocks.get(game + ':die:' + n + (k === 0 ? '' : ':' + k));
      for (var i = 0; i < 32; i++) { if (b[i] < 252) { return b[i] % 6 + 1; } }
    }
  }

  var CANONICAL = [];
  ['S', 'H', 'D', 'C'].forEach(function (suit) {
    ['7', '8', '9', 'T', 'J', 'Q', 'K', 'A'].forEach(function (rank) { CANONICAL.push(rank + suit); });
  });

  async function shuffle(blocks, game, d) {
    var deck = CANONICAL.slice();
    var s = new Stream(blocks, game + ':deal:' + d);
    for (var i = 31; i >= 1; i--) {
      var j = await s.below(i + 1);
      var t = deck[i]; deck[i] = deck[j]; deck[j] = t;
    }
    return deck;
  }

  // Belote dealing (rules): 3 to first hand, 3 to the dealer, 3, 3; the 13th card is turned.
  function initialDeal(deck, dealer) {
    var first = 1 - dealer, hands = [[], []];
    hands[first] = hands[first].concat(deck.slice(0, 3));
    hands[dealer] = hands[dealer].concat(deck.slice(3, 6));
    hands[first] = hands[first].concat(deck.slice(6, 9));
    hands[dealer] = hands[dealer].concat(deck.slice(9, 12));
    return { hands: hands, turned: deck[12] };
  }

  // Completion: first hand then dealer receive 3 (the taker: the turned card and 2), then 7 and 7.
  function completedHands(deck, dealer, taker) {
    var first = 1 - dealer, init = initialDeal(deck, dealer), next = 13;
    [first, dealer].forEach(function (p) {
      if (p === taker) {
        init.hands[p] = init.hands[p].concat([deck[12]], deck.slice(next, next + 2));
        next += 2;
      } else {
        init.hands[p] = init.hands[p].concat(deck.slice(next, next + 3));
        next += 3;
      }
    });
    init.hands[first] = init.hands[first].concat(deck.slice(next, next + 7));
    next += 7;
    init.hands[dealer] = init.hands[dealer].concat(deck.slice(next, next + 7));
    return init.hands;
  }

  async function duel(blocks, game, m) {
    var b = await blocks.get(game + ':duel:' + m);
    return b[0] < 128;
  }

  async function select(blocks, game, color, chosen, eligible) {
    if (chosen.length >= 3) { return []; }
    var left = eligible.filter(function (sq, i, all) { return chosen.indexOf(sq) < 0 && all.indexOf(sq) === i; })
      .sort(function (a, b) { return a - b; });
    var s = new Stream(blocks, game + ':select:' + color), picks = [];
    while (chosen.length + picks.length < 3 && left.length) {
      var i = await s.below(left.length);
      picks.push(left.splice(i, 1)[0]);
    }
    return picks;
  }

  function sortedKey(list) { return list.slice().sort().join(' '); }
  function sameCards(a, b) { return sortedKey(a || []) === sortedKey(b || []); }

  function cell(kind, i, text, good) {
    var el = document.querySelector('td.browser[data-kind="' + kind + '"][data-i="' + i + '"]');
    if (!el) { return; }
    el.textContent = text;
    el.classList.toggle('mismatch', !good);
  }

  async function run() {
    var res = await fetch(box.getAttribute('data-json'), { credentials: 'omit', headers: { 'Accept': 'application/json' } });
    if (!res.ok) { throw new Error('the verification data could not be loaded (' + res.status + ')'); }
    var v = await res.json();
    var draws = v.dice.length + v.deals.length + v.duels.length + v.selections.length;
    // Only when the server says so too: a game whose kind draws at random with nothing logged
    // (no commitment, no seed) is a failure, not a game without chance.
    if (!v.commitment && !v.seed && draws === 0 && v.verdict === 'n/a') {
      finish('agree', 'n/a', 'Nothing is drawn at random in this game: nothing to recompute.');
      return;
    }
    var problems = [], disagreements = [], checked = 0;
    if (!v.seed || !/^[0-9a-f]{64}$/.test(v.seed)) {
      problems.push(v.seed ? 'the revealed seed is not 64 lowercase hex characters' : 'the seed was not revealed');
      finish(v.verdict === 'fail' ? 'agree' : 'disagree', 'fail', problems.join('; ') + '.');
      return;
    }
    var digest = hex(await subtle.digest('SHA-256', enc.encode(v.seed)));
    if (digest !== v.seed_sha256) { disagreements.push('SHA-256 of the seed'); }
    if (!v.commitment) { problems.push('no commitment was published'); }
    else if (digest !== v.commitment) { problems.push('SHA-256 of the seed differs from the commitment'); }
    var key = await subtle.importKey('raw', enc.encode(v.seed), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    var blocks = new Blocks(key);
    var game = v.game;

    for (var i = 0; i < v.dice.length; i++) {
      var d = v.dice[i], face = await die(blocks, game, d.n);
      checked++;
      if (face !== d.logged) { problems.push('roll ' + d.n + ' (seq ' + d.seq + ')'); }
      if (face !== d.derived) { disagreements.push('roll ' + d.n); }
      cell('die', i, String(face), face === d.logged);
    }
    for (i = 0; i < v.deals.length; i++) {
      var deal = v.deals[i];
      var deck = await shuffle(blocks, game, deal.deal);
      // The dealer by the rules: the second player listed deals deal 0, then it alternates.
      var dealer = deal.deal % 2 === 0 ? 1 : 0;
      var ok = v.seats.length === 2;
      if (deck.join(' ') !== deal.derived_deck.join(' ')) { disagreements.push('deck of deal ' + deal.deal); }
      if (ok) {
        var init = initialDeal(deck, dealer);
        ok = init.turned === deal.turned && Object.keys(deal.hands).length === v.seats.length;
        v.seats.forEach(function (seat, p) { ok = ok && sameCards(deal.hands[seat], init.hands[p]); });
        if (deal.completion) {
          var taker = v.seats.indexOf(deal.completion.taker);
          var full = taker >= 0 ? completedHands(deck, dealer, taker) : null;
          ok = ok && full !== null && Object.keys(deal.completion.hands).length === v.seats.length;
          v.seats.forEach(function (seat, p) { ok = ok && full !== null && sameCards(deal.completion.hands[seat], full[p]); });
        }
      }
      checked++;
      if (!ok) { problems.push('deal ' + deal.deal + ' (seq ' + deal.seq + ')'); }
      if (ok !== deal.ok) { disagreements.push('deal ' + deal.deal); }
      cell('deal', i, ok ? 'same cards' : 'different cards', ok);
    }
    for (i = 0; i < v.duels.length; i++) {
      var du = v.duels[i], won = await duel(blocks, game, du.m);
      checked++;
      if (won !== du.logged) { problems.push('duel ' + du.m + ' (seq ' + du.seq + ')'); }
      if (won !== du.derived) { disagreements.push('duel ' + du.m); }
      cell('duel', i, won ? 'success' : 'failure', won === du.logged);
    }
    for (i = 0; i < v.selections.length; i++) {
      var s = v.selections[i];
      var picks = await select(blocks, game, s.color, s.chosen, s.eligible);
      checked++;
      var same = sortedKey(picks.map(String)) === sortedKey(s.logged.map(String));
      if (!same) { problems.push('selection of ' + s.color + ' (seq ' + s.seq + ')'); }
      if (picks.join(' ') !== s.derived.join(' ')) { disagreements.push('selection of ' + s.color); }
      cell('selection', i, picks.join(' '), same);
    }

    var verdict = problems.length ? 'fail' : 'pass';
    // The server also checks what a single page cannot: commitment and reveal timing, seed reuse
    // across games, the draws' numbering, and lines missing, repeated or edited in the log.
    var serverOnly = v.failures.filter(function (f) {
      return /^(late_commitment|seed_reused|seed_missing|seed_early|draw_misnumbered|seq_gap|seq_duplicate|chain_broken|duel_misapplied|missing_start)$/.test(f.code);
    });
    if (!problems.length && serverOnly.length) { verdict = 'fail'; }
    var agree = !disagreements.length && verdict === v.verdict;
    var text = 'Recomputed ' + checked + ' outcome' + (checked === 1 ? '' : 's') + ' and the commitment here, in your browser. ';
    text += problems.length ? 'Differences from the log: ' + problems.join(', ') + '. ' : 'Everything matches the log. ';
    if (serverOnly.length) { text += 'Our server also reports: ' + serverOnly.map(function (f) { return f.code; }).join(', ') + ' (checked across the platform). '; }
    text += agree ? 'Your browser agrees with our server.' : 'Your browser disagrees with our server' + (disagreements.length ? ' on ' + disagreements.join(', ') : '') + '.';
    finish(agree ? 'agree' : 'disagree', verdict, text);
  }

  run().catch(function (e) { finish('error', 'error', 'The check could not run: ' + e.message); });
})();
