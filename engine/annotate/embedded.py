"""The embedded annotator: A-MEM's three LLM stages done offline, deterministically.

- note:   keywords = salient words (frequency, proper-noun and length bonuses, no stopwords);
          tags = the topics whose prototype sentence is closest to the content in embedding space;
          context = one sentence naming who speaks, about what, when, under which topics.
- note:   the context also names what the interaction replies to (the previous turn's speaker and keywords),
          since a chat turn alone ("Yes, last Tuesday!") often says little.
- link:   at most `max_links` of the strongest candidates; a candidate is linked when its cosine to the new
          note reaches `link_threshold`, or when they share two or more keywords (or a proper name) and the
          cosine reaches `link_keyword_threshold`, or when
          the new note supersedes the candidate's fact (engine.annotate.facts.decision).
- evolve: every linked neighbour gains the new note's leading keywords it lacks, the new note's tags, and
          a "Related:" clause in its context naming the new note's topic and date (the newest two kept);
          it is marked superseded when engine.annotate.facts.decision says the new note replaces its fact
          (the Decision's reason is recorded on the retired version).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.annotate.facts.cues import masked
from engine.annotate.facts.decision import Decision, Statement, confirm, decide, masked_parts, similarity
from engine.annotate.facts.pair_judge import pair_judge
from engine.annotate.facts.sentence import sentence_encoder
from engine.annotate.schemas import (
    Annotation,
    Candidate,
    EvolveRequest,
    LinkChoice,
    LinkRequest,
    NeighbourUpdate,
)
from engine.config import Config
from engine.encode import Encoder
from engine.model.note import Interaction, Note, clip
from engine.text import keywords, stem

TOPICS: dict[str, str] = {
    "work": "job, career, office, boss, colleagues, working, salary, promotion",
    "family": "family, parents, mother, father, kids, children, siblings, brother, sister",
    "relationships": "relationship, partner, dating, boyfriend, girlfriend, marriage, wedding, love",
    "friends": "friends, friendship, hanging out with friends, social life",
    "health": "health, doctor, illness, hospital, medicine, therapy, injury, mental health",
    "fitness": "exercise, running, gym, workout, sports, yoga, hiking, fitness",
    "food": "food, cooking, recipe, restaurant, dinner, baking, meals, diet",
    "travel": "travel, trip, vacation, flight, visiting another country, road trip, hotel",
    "home": "home, house, apartment, moving, rent, neighborhood, living, city",
    "education": "school, college, university, studying, classes, degree, exams, learning",
    "art": "art, painting, drawing, music, concert, singing, instrument, creativity, photography",
    "reading": "books, reading, novel, author, library, writing, poetry",
    "pets": "pets, dog, cat, animals, puppy, adopting a pet",
    "nature": "nature, outdoors, camping, beach, mountains, garden, park",
    "money": "money, finance, budget, savings, buying, shopping, expenses, price",
    "technology": "technology, computer, software, phone, apps, programming, games",
    "emotions": "feelings, happy, sad, stressed, anxious, proud, grateful, excited",
    "identity": "identity, gender, transgender, LGBTQ, pride, community, acceptance, belief",
    "volunteering": "volunteering, charity, helping others, activism, community service, support group",
    "events": "event, party, celebration, birthday, festival, meeting, appointment, schedule",
    "plans": "plans, goals, future, dreams, hoping to, next year, aspirations",
}


JUDGE_TOP = 1
"""The pair judge reads only a new note's closest candidate: each judgement is a transformer forward (5-10
ms on 2 CPU cores). LoCoMo dev's ingest (2,759 chat turns, 1,673 pairs reach the judge with every
candidate) took 6.9 s without the judge, 12.4 s with the 3 closest, 7.6 s with the closest; on the
scenarios' dev split the closest found what the 3 did (docs/facts.md)."""
_CACHED = 20_000
"""Decisions and masked vectors kept: a batch of 1,000 notes judges ~10,000 pairs twice (link, evolve);
the caches are per batch in effect, so their memory does not grow with the tenant."""


class EmbeddedAnnotator:
    name = "embedded"

    def __init__(self, config: Config, encoder: Encoder) -> None:
        self.config = config
        self.encoder = encoder
        self._topic_names = list(TOPICS)
        self._topic_vecs = encoder.encode_batch([f"{n}: {d}" for n, d in TOPICS.items()])
        self._masked: dict[str, np.ndarray] = {}
        """Masked-text vectors for the supersession decision: each note is compared with many candidates."""
        self._decided: dict[tuple[str, str | None, str, str | None], Decision] = {}
        """Decisions of the current batch: the link stage asks about each pair, then evolve again."""
        self._sentences: dict[str, np.ndarray] = {}
        """Sentence-encoder (MiniLM) vectors of masked texts: only the few pairs that reach decision step 3's
        last test (no shared word, a change cue) are encoded."""
        self._judged: dict[tuple[str, str], float] = {}
        """Pair-judge probabilities (decision step 5) of the pairs the rules kept and that reached it."""

    # --- stage: note --------------------------------------------------------
    def annotate(self, items: Sequence[Interaction]) -> list[Annotation]:
        texts = [clip(item.content, self.config.write.max_content_chars) for item in items]
        vecs = self.encoder.encode_batch(texts)
        sims = vecs @ self._topic_vecs.T if len(texts) else np.zeros((0, len(self._topic_names)))
        return [
            self._annotate_one(item, text, row) for item, text, row in zip(items, texts, sims, strict=True)
        ]

    def _annotate_one(self, item: Interaction, text: str, topic_sims: np.ndarray) -> Annotation:
        kws = keywords(text, self.config.write.max_keywords)
        order = np.argsort(-topic_sims, kind="stable")
        tags = [self._topic_names[i] for i in order[: self.config.write.max_tags] if topic_sims[i] >= 0.25][
            :3
        ]
        if not tags:
            tags = [self._topic_names[int(order[0])]]
        who = item.speaker or "Someone"
        about = ", ".join(kws[:4]) or "a short remark"
        when = item.timestamp.strftime("%d %B %Y")
        context = f"{who} talks about {about} on {when}; topics: {', '.join(tags)}."
        if item.previous:
            prev_who, _, prev_text = item.previous.partition(": ")
            context += f" In reply to {prev_who} about {', '.join(keywords(prev_text, 4)) or 'a remark'}."
        return Annotation(keywords=kws, tags=tags, context=context, annotated_by=self.name)

    # --- stage: link ----------------------------------------------------------
    def judge_links(self, requests: Sequence[LinkRequest]) -> list[list[LinkChoice]]:
        self._warm_masked(requests)
        return [self._judge(req) for req in requests]

    def _warm_masked(self, requests: Sequence[LinkRequest]) -> None:
        """Encode in one call the masked statements the decisions will compare: the encoder's cost is per
        call far more than per text (one call per compared pair was a quarter of ingest). A first pass
        decides every pair it can without a similarity and notes the texts of those that need one; then
        the pairs that reach the pair judge are judged in one batch the same way."""
        texts: list[str] = []
        probe = _Probe(texts, [])
        self._probe(requests, probe)
        self._encode_missing(texts)
        if texts:  # decisions deferred for a similarity may reach the judge now
            probe = _Probe(None, probe.pairs)
            self._probe(requests, probe)
        self._judge_missing(probe.pairs)

    def _probe(self, requests: Sequence[LinkRequest], probe: _Probe) -> None:
        for req in requests:
            for cand, judged in _closest_first(req):
                self._decide(cand.note, req.note, probe, cand.fixed, judged)

    def _judge(self, req: LinkRequest) -> list[LinkChoice]:
        new_kw = _stems(req.note.keywords)
        chosen = []
        for cand, judged in _closest_first(req):
            reason = self._link_reason(req.note, new_kw, cand, judged)
            if reason:
                chosen.append(LinkChoice(target=cand.note.id, reason=reason))
        return chosen[: self.config.write.max_links]

    def _link_reason(self, new: Note, new_kw: dict[str, str], cand: Candidate, judged: bool) -> str | None:
        old, score = cand.note, cand.score
        decision = self._decide(old, new, None, cand.fixed, judged)
        assert decision is not None  # only a probe defers
        if decision.supersedes:
            return f"updates fact: {decision.reason.removeprefix('superseded: ')}"
        shared = [new_kw[s] for s in new_kw.keys() & _stems(old.keywords).keys()]
        if score >= self.config.write.link_threshold:
            return f"similar (cosine {score:.2f})" + (
                f"; shared: {', '.join(sorted(shared))}" if shared else ""
            )
        if score >= self.config.write.link_keyword_threshold and (len(shared) >= 2 or _has_name(shared, new)):
            return f"shared keywords: {', '.join(sorted(shared))} (cosine {score:.2f})"
        return None

    # --- stage: evolve -----------------------------------------------------------
    def evolve(self, requests: Sequence[EvolveRequest]) -> list[list[NeighbourUpdate]]:
        return [[self._evolve_one(req.note, nb) for nb in req.neighbours] for req in requests]

    def _evolve_one(self, new: Note, old: Note) -> NeighbourUpdate:
        have = _stems(old.keywords)
        gained = [k for k in new.keywords[:4] if stem(k) not in have][:2]
        kws = (old.keywords + gained)[: self.config.write.max_keywords]
        tags = list(dict.fromkeys(old.tags + new.tags))[: self.config.write.max_tags]
        base, *related = old.context.split(" Related: ")
        clause = f"{new.speaker or 'someone'} on {new.timestamp:%d %B %Y} about {', '.join(new.keywords[:3])}"
        context = " Related: ".join([base, *related[-1:], clause])
        decision = self.supersession(old, new)
        reason = decision.reason if decision.supersedes else f"evolved by {new.id}"
        return NeighbourUpdate(
            target=old.id,
            context=context,
            keywords=kws,
            tags=tags,
            supersedes=decision.supersedes,
            reason=reason,
        )

    # --- supersession -----------------------------------------------------------------------------
    def supersession(self, old: Note, new: Note, fixed: bool | None = None) -> Decision:
        """engine.annotate.facts.decision on two notes, with the similarity of their masked texts;
        `fixed`: `is_fixed(old.content)` where the caller knows it (`Candidate.fixed`)."""
        decision = self._decide(old, new, None, fixed)
        assert decision is not None  # only a probe defers
        return decision

    def _decide(
        self, old: Note, new: Note, probe: _Probe | None, fixed: bool | None = None, judged: bool = True
    ) -> Decision | None:
        """With `probe`, a decision that would encode texts or judge the pair notes them there and returns
        None instead. `judged`: the pair judge may be asked (a candidate among the JUDGE_TOP closest)."""
        key = (old.content, old.speaker, new.content, new.speaker)
        if (known := self._decided.get(key)) is None:
            if len(self._decided) > _CACHED:
                self._decided.clear()
            # Clipped first: the rules' and encoder's cost is bounded by max_content_chars, not the input.
            chars = self.config.write.max_content_chars
            old_text, new_text = clip(old.content, chars), clip(new.content, chars)
            sim = functools.partial(self._similarity, old_text, new_text, probe)
            close = functools.partial(self._sentence_similarity, old_text, new_text)
            judge = functools.partial(self._judge_probability, old_text, new_text, probe)
            known_fixed = fixed if old_text is old.content else None  # the column read the unclipped text
            try:
                known = decide(
                    Statement(old_text, old.speaker, known_fixed),
                    Statement(new_text, new.speaker),
                    sim,
                    close,
                    judge if judged and self.config.write.fact_judge else None,
                )
            except _Deferred:
                return None
            self._decided[key] = known
        return known

    def _similarity(self, old_text: str, new_text: str, probe: _Probe | None) -> float:
        """The masked-statement cosine; with a probe, texts not encoded yet are added there
        and the decision is deferred instead of encoding them one pair at a time."""
        if probe is not None and probe.texts is not None:
            missing = [t for t in (masked(old_text), *masked_parts(new_text)) if t not in self._masked]
            if missing:
                probe.texts.extend(missing)
                raise _Deferred
        return similarity(self._encode_masked, old_text, new_text)

    def _judge_probability(self, old_text: str, new_text: str, probe: _Probe | None) -> float | None:
        """The pair judge's probability (None without its model); a probe defers the pair for one batch."""
        key = (old_text, new_text)
        if key not in self._judged:
            if probe is not None:
                probe.pairs.append(key)
                raise _Deferred
            self._judge_missing([key])
        return self._judged.get(key)

    def _judge_missing(self, pairs: list[tuple[str, str]]) -> None:
        judge = pair_judge()
        missing = [p for p in dict.fromkeys(pairs) if p not in self._judged]
        if judge is None or not missing:
            return
        if len(self._judged) + len(missing) > _CACHED:
            self._judged.clear()
        self._judged.update(zip(missing, judge.probabilities(missing).tolist(), strict=True))

    def _sentence_similarity(self, old_text: str, new_text: str) -> float:
        """The masked-statement cosine under the sentence encoder (0.0 when its package is missing)."""
        encoder = sentence_encoder()
        if encoder is None:
            return 0.0
        return similarity(functools.partial(self._encode_sentences, encoder), old_text, new_text)

    def _encode_sentences(self, encoder: Encoder, texts: list[str]) -> np.ndarray:
        self._encode_missing(texts, self._sentences, encoder)
        return np.stack([self._sentences[t] for t in texts])

    def vet_supersessions(
        self, requests: Sequence[EvolveRequest], answers: list[list[NeighbourUpdate]]
    ) -> list[list[NeighbourUpdate]]:
        """Another judge's (the LLM's) supersessions, each kept only if the same guards let it stand."""
        for req, updates in zip(requests, answers, strict=True):
            olds = {n.id: n for n in req.neighbours}
            for update in updates:
                old = olds.get(update.target)
                if update.supersedes and old is not None and not update.reason.startswith("superseded: "):
                    sim = similarity(self._encode_masked, old.content, req.note.content)
                    new = Statement(req.note.content, req.note.speaker)
                    decision = confirm(Statement(old.content, old.speaker), new, sim, update.reason or "llm")
                    update.supersedes, update.reason = decision.supersedes, decision.reason
        return answers

    def _encode_masked(self, texts: list[str]) -> np.ndarray:
        self._encode_missing(texts)
        return np.stack([self._masked[t] for t in texts])

    def _encode_missing(
        self, texts: list[str], cache: dict[str, np.ndarray] | None = None, encoder: Encoder | None = None
    ) -> None:
        cache = self._masked if cache is None else cache
        encoder = encoder or self.encoder
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if len(cache) + len(missing) > _CACHED:  # cleared before adding: every text asked is present
            cache.clear()
            missing = list(dict.fromkeys(texts))
        for i in range(0, len(missing), self.config.encoder.batch_size):
            part = missing[i : i + self.config.encoder.batch_size]
            rows = encoder.encode_batch(part)
            cache.update(zip(part, [r.copy() for r in rows], strict=True))  # a view pins its batch

    def close(self) -> None:
        pass


class _Deferred(Exception):
    """A decision needs a similarity whose texts are not encoded yet, or a pair judged (see `_warm_masked`)."""


@dataclass(slots=True)
class _Probe:
    """What deferred decisions need: texts to encode (None: encode as asked) and pairs to judge."""

    texts: list[str] | None
    pairs: list[tuple[str, str]]


def _closest_first(req: LinkRequest) -> list[tuple[Candidate, bool]]:
    """The candidates, closest first, each with whether the pair judge may read it (the JUDGE_TOP closest):
    the probe and the link stage must ask the same pairs."""
    ranked = sorted(req.candidates, key=lambda c: -c.score)
    return [(cand, rank < JUDGE_TOP) for rank, cand in enumerate(ranked)]


def _stems(words: Sequence[str]) -> dict[str, str]:
    return {stem(w.lower()): w for w in words}


def _has_name(shared: list[str], note: Note) -> bool:
    return any(w[:1].upper() + w[1:] in note.content for w in shared)
