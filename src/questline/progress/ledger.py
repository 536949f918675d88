"""The progress ledger's rules, written once for every way a completion is recorded or
withdrawn: the route (a batch of one), the group commit (a batch of many), on either
backend (``ledger_pg``, ``ledger_sqlite``), and the demo loader (``service``).

A batch of writes is recorded in three steps; only the first and the last touch SQL:

1. *look up*, per write, its team (status, score, ``score_reached_at``, whether it has
   history, the row's ``version``), its task (discipline and points, when the
   organization sees it) and any existing completion: ``Plan.see``;
2. *decide* every write in arrival order: ``Plan.decide`` (the refusals, in the order
   the API always gave them, idempotency, the score step);
3. *write* the net result: ``Plan.changes`` (the rows each dialect's statements take).

Every change of a team's score is a ``TeamState.step``: the endpoints' writes, and a
task removed from a discipline (``scores.apply_steps``).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from questline.disciplines.checks import AnswerKeys, TaskCheck, any_matches
from questline.disciplines.models import CheckKind
from questline.members.callers import acting_as, best_named
from questline.progress import schemas
from questline.progress.learner_records import SEALED_AS
from questline.progress.models import ScoreChange
from questline.progress.rates import rate_refusal
from questline.readmodel import moved
from questline.storage.db import new_id
from questline.teams.models import TeamStatus
from questline.teams.ranking import PlaceKey, place_key
from questline.teams.service import archived
from questline.timeformat import rfc3339
from questline.web.errors import (
    AlreadyCompleted,
    FieldError,
    NoAttemptsLeft,
    Problem,
    Unprocessable,
    not_found,
)
from questline.web.identity import Caller

CLOCK_SKEW = dt.timedelta(seconds=5)
"""How far in the future a ``CompletedAt`` may be before it is refused (client clocks)."""


@dataclass(frozen=True, slots=True)
class Completing:
    org_id: uuid.UUID
    team_id: uuid.UUID
    data: schemas.ProgressCreate
    recorded_by: str | None = None
    """Who recorded it: the caller's subject (a token's ``sub``, a session's)."""


@dataclass(frozen=True, slots=True)
class Withdrawing:
    org_id: uuid.UUID
    team_id: uuid.UUID
    task_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class Answering:
    """A team's answer to an ``Answer`` task (``POST /team/{id}/attempts``): counted, and
    when right it completes the task as the caller's member."""

    org_id: uuid.UUID
    team_id: uuid.UUID
    task_id: uuid.UUID
    answer: str = field(repr=False)
    """What the learner sent: never in a representation of the write (a log line)."""
    caller: Caller = field(repr=False)
    keys: Callable[[uuid.UUID | None], AnswerKeys] = field(repr=False)
    """The answer keys of a discipline's owner (``disciplines.checks.answer_keys``)."""
    per_minute: int
    """One actor's attempts a minute at most (``QUESTLINE_ATTEMPTS_PER_MINUTE``)."""

    def actor(self, member_id: uuid.UUID | None) -> str:
        """Whose rate the attempt counts against: the member's, or the admin's subject."""
        return str(member_id) if member_id else self.caller.subject


Write = Completing | Withdrawing | Answering


def task_of(write: Write) -> uuid.UUID:
    return write.data.task_id if isinstance(write, Completing) else write.task_id


@dataclass(frozen=True, slots=True)
class AnswerSight:
    """What the look-up found for an answer beyond the team, task and completion: the
    task's check, the members the caller's identity names (rows of
    ``members.callers.named_members``), the team's attempts at the task, and the lock of
    its level (``progress.locks``), and the rates of the actors it may be."""

    check: TaskCheck | None
    named: Sequence[Sequence[Any]]
    used: int
    """The team's attempts at the task (counted only when the task limits them)."""
    locked: Problem | None
    recent: dict[str, dict[int, dt.datetime]]
    """By member id (each one named): that member's stored attempts within the minute
    its rate may find at the limit, by rank (0: the latest; ``rates.window``)."""
    subject_recent: dict[int, dt.datetime]
    """The same for the caller's subject (the actor of an admin acting as none)."""


@dataclass(frozen=True, slots=True)
class Answered:
    """An answer's outcome: right (``completion``: the task completed by it) or wrong."""

    correct: bool
    attempts_left: int | None
    completion: schemas.Completion | None


@dataclass(frozen=True, slots=True)
class Recorded:
    completion: schemas.Completion
    """With ``score``: the team's score after the request."""
    created: bool
    body: bytes | None = None
    """The completion's JSON as the API writes it, when already made (once for the
    outbox event and the response)."""


Outcome = Recorded | schemas.Completion | Answered
"""What a write did: ``Recorded`` (completed, or found done), the withdrawn
``Completion`` with the team's new score, or an ``Answered``."""


@dataclass(frozen=True, slots=True)
class Done:
    """A completion as stored: what it earned, and when."""

    discipline_id: uuid.UUID
    points: int
    completed_at: dt.datetime
    member_id: uuid.UUID | None = None
    """The member of the team who completed the task (null: not said)."""
    recorded_by: str | None = None

    def as_completion(
        self, team_id: uuid.UUID, task_id: uuid.UUID, score: int | None
    ) -> schemas.Completion:
        return schemas.Completion(
            team_id=team_id,
            task_id=task_id,
            discipline_id=self.discipline_id,
            points=self.points,
            completed_at=self.completed_at,
            member_id=self.member_id,
            recorded_by=self.recorded_by,
            score=score,
        )


def checked_time(given: dt.datetime | None, now: dt.datetime, field: str) -> dt.datetime:
    """When a score change counts (a completion's ``CompletedAt``, an adjustment's
    ``At``): now when not given; refused (422, naming ``field``) beyond the clock skew."""
    if given is None:
        return now
    if given > now + CLOCK_SKEW:
        raise Unprocessable(
            f"{field} is in the future.",
            errors=[FieldError(field=field, message="Must not be in the future.")],
        )
    return given


@dataclass(slots=True)
class TeamState:
    """A team's row as looked up, and what the steps decided so far did to it."""

    status: str
    version: int
    """The row's version at the look-up (PostgreSQL's group commit writes only if it
    still is)."""
    score: int
    reached_at: dt.datetime
    has_history: bool
    completed: int = 0
    """Change of ``tasks_completed``."""
    steps: int = 0
    """Steps applied: the row's ``version`` grows by as many."""
    place: PlaceKey = field(init=False)
    """Where the team stood in the overall order at the look-up."""

    def __post_init__(self) -> None:
        self.place = place_key(self.score, self.reached_at)

    def step(self, delta: int, completions: int, at: dt.datetime) -> int:
        """One change of the score (``completions``: +1, -1), at ``at`` on the timeline;
        returns the new score.

        ``score_reached_at`` is the leaderboard's tie-breaker (earliest to reach the
        score ranks first): the time of the team's latest change on the timeline
        (``max(at)`` of its history), or its creation while it has none. A completion
        sent with a past ``CompletedAt`` therefore counts at that time."""
        self.score += delta
        self.completed += completions
        self.steps += 1
        if not (self.has_history and self.reached_at > at):
            self.reached_at = at
        self.has_history = True
        return self.score


def history_row(
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    task_id: uuid.UUID | None,
    discipline_id: uuid.UUID | None,
    kind: ScoreChange,
    delta: int,
    score_after: int,
    at: dt.datetime,
) -> dict[str, Any]:
    """One appended row of ``score_events`` (history is never rewritten)."""
    return {
        "organization_id": org_id,
        "id": new_id(),
        "team_id": team_id,
        "task_id": task_id,
        "discipline_id": discipline_id,
        "kind": kind.value,
        "delta": delta,
        "score_after": score_after,
        "at": at,
    }


def event_row(org_id: uuid.UUID, type: str, body: bytes) -> dict[str, Any]:
    """One outbox event: its payload is the JSON as the API writes it (a completion's
    with the new score)."""
    return {"organization_id": org_id, "id": new_id(), "type": type, "payload": body.decode()}


Refused = Problem
"""A write's refusal (404, 409, 422): nothing is written for it."""


@dataclass(frozen=True, slots=True)
class Changes:
    """A plan's net result, as rows for the dialect's statements."""

    added: list[dict[str, Any]]
    replaced: list[dict[str, Any]]
    """Completions withdrawn and completed again in the same batch."""
    removed: list[dict[str, Any]]
    tasks: list[dict[str, Any]]
    """Each task completed, with the discipline and points it was looked up with."""
    teams: list[dict[str, Any]]
    history: list[dict[str, Any]]
    events: list[dict[str, Any]]
    attempts: list[dict[str, Any]]
    """The answers counted (``task_attempts`` rows, the answer sealed)."""
    organizations: list[uuid.UUID]
    """Whose read-model version to bump, sorted (the lock order)."""


@dataclass(slots=True)
class Plan:
    """What a batch does, decided write by write."""

    now: dt.datetime
    teams: dict[tuple[uuid.UUID, uuid.UUID], TeamState] = field(default_factory=dict)
    tasks: dict[int, tuple[uuid.UUID, int] | None] = field(default_factory=dict)
    """By write position: the task's (discipline, points), ``None`` if not visible."""
    done: dict[tuple[uuid.UUID, uuid.UUID, uuid.UUID], Done | None] = field(default_factory=dict)
    first_done: dict[tuple[uuid.UUID, uuid.UUID, uuid.UUID], Done | None] = field(
        default_factory=dict
    )
    members: dict[int, bool] = field(default_factory=dict)
    """By write position: whether the completion's ``MemberId`` is one of the team's."""
    listened: dict[uuid.UUID, bool] = field(default_factory=dict)
    """By organization: whether an outbox consumer listens to it (``fanout.Listeners``):
    no event is recorded for one nobody listens to."""
    answers: dict[int, AnswerSight] = field(default_factory=dict)
    """By write position: what an answer's look-up found (``see_answer``)."""
    answered: dict[tuple[uuid.UUID, str], int] = field(default_factory=dict)
    """By (organization, actor): answers counted in this batch."""
    used: dict[tuple[uuid.UUID, uuid.UUID, uuid.UUID], int] = field(default_factory=dict)
    """Attempts decided in this batch, by (organization, team, task)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    bumped: set[uuid.UUID] = field(default_factory=set)
    """Organizations whose cached reads a counted answer changes (``AttemptsLeft``)."""
    written: list[Write] = field(default_factory=list)
    completed: int = 0
    withdrawn: int = 0

    def see(
        self,
        position: int,
        write: Write,
        *,
        team: TeamState,
        task: tuple[uuid.UUID, int] | None,
        done: Done | None,
        member_of_team: bool = False,
        listened: bool = True,
    ) -> None:
        """What the look-up found for the write at ``position`` (a team not found: not
        seen at all). The first sight of a team or completion is kept: the later writes
        of the batch see what the earlier ones decided."""
        self.teams.setdefault((write.org_id, write.team_id), team)
        self.listened.setdefault(write.org_id, listened)
        self.tasks[position] = task
        self.members[position] = member_of_team
        done_key = (write.org_id, write.team_id, task_of(write))
        if done_key not in self.done:
            self.done[done_key] = self.first_done[done_key] = done

    def see_answer(self, position: int, sight: AnswerSight) -> None:
        """What the answer look-up found for the ``Answering`` at ``position``."""
        self.answers[position] = sight

    def decide(self, position: int, write: Write) -> Outcome | Refused:
        """The write's outcome, or its refusal in the order the API always gave them:
        404 team, 409 archived team, then for a completion 404 task and 422 (a future
        ``CompletedAt``, a ``MemberId`` not of the team), for a withdrawal 404
        completion (an answer: ``_answer``). A repeated completion changes nothing; only
        the write that adds a completion changes the score."""
        if isinstance(write, Answering):
            return self._answer(position, write)
        team = self.teams.get((write.org_id, write.team_id))
        if team is None:
            return not_found("team")
        if team.status != TeamStatus.ACTIVE.value:
            return archived("progress")
        task_id = task_of(write)
        done_key = (write.org_id, write.team_id, task_id)
        done = self.done[done_key]
        if isinstance(write, Completing):
            task = self.tasks.get(position)
            if task is None:
                return not_found("task")
            try:
                completed_at = checked_time(write.data.completed_at, self.now, "CompletedAt")
            except Problem as refused:
                return refused
            member_id = write.data.member_id
            if member_id is not None and not self.members.get(position, False):
                return Unprocessable(
                    "MemberId is not a member of this team.",
                    errors=[FieldError(field="MemberId", message="Name a member of the team.")],
                )
            if done is not None:
                return Recorded(done.as_completion(write.team_id, task_id, team.score), False)
            added = Done(task[0], task[1], completed_at, member_id, write.recorded_by)
            self.done[done_key] = added
            completion, body = self._step(write, team, added, ScoreChange.COMPLETED, completed_at)
            return Recorded(completion, True, body)
        if done is None:
            return not_found("completion of this task by this team")
        self.done[done_key] = None
        withdrawn, _ = self._step(write, team, done, ScoreChange.WITHDRAWN, self.now)
        return withdrawn

    def _answer(self, position: int, write: Answering) -> Answered | Refused:
        """An answer, its refusals in the order of every learner action (404 team, 403
        not the team's member, 409 archived, 404 task, 422 not an ``Answer`` task, 409
        locked level), then its own (409 done, 409 no attempts left, 429 too fast). A
        refused answer is neither stored nor counted."""
        team = self.teams.get((write.org_id, write.team_id))
        sight = self.answers.get(position)
        if team is None or sight is None:
            return not_found("team")
        try:
            member_id = acting_as(write.caller, best_named(write.caller, sight.named))
        except Problem as refused:
            return refused
        if team.status != TeamStatus.ACTIVE.value:
            return archived("answers")
        task, check = self.tasks.get(position), sight.check
        if task is None or check is None:
            return not_found("task")
        if check.kind is not CheckKind.ANSWER:
            return Unprocessable(
                f"The task is completed by {check.kind.value}, not by Answer.",
                errors=[FieldError(field="TaskId", message="Name a task of Kind Answer.")],
            )
        if sight.locked is not None:
            return sight.locked
        key = (write.org_id, write.team_id, write.task_id)
        if self.done[key] is not None:
            return AlreadyCompleted("The team already completed this task; nothing was counted.")
        used = sight.used + self.used.get(key, 0)
        if check.max_attempts is not None and used >= check.max_attempts:
            return NoAttemptsLeft(
                f"The team used all {check.max_attempts} attempts at this task; this one was "
                "not counted."
            )
        actor = (write.org_id, write.actor(member_id))
        stored = sight.recent.get(actor[1], {}) if member_id else sight.subject_recent
        earlier = self.answered.get(actor, 0)
        rank = write.per_minute - 1 - earlier  # the limit-th latest, this batch's first
        limit_th = self.now if rank < 0 else stored.get(rank)
        too_fast = rate_refusal(limit_th, now=self.now, limit=write.per_minute)
        if too_fast is not None:
            return too_fast
        correct = any_matches(write.keys(check.owner), write.answer, check.answers)
        left = None if check.max_attempts is None else check.max_attempts - used - 1
        completion = None
        if correct:
            added = Done(task[0], task[1], self.now, member_id, write.caller.subject)
            self.done[key] = added
            completion, _ = self._step(write, team, added, ScoreChange.COMPLETED, self.now)
        elif check.max_attempts is not None:
            self.bumped.add(write.org_id)  # the overview's AttemptsLeft
        self.used[key] = self.used.get(key, 0) + 1
        self.answered[actor] = earlier + 1
        self._count(write, member_id, actor[1], correct, left, check.discipline_id)
        return Answered(correct, left, completion)

    def _count(
        self,
        write: Answering,
        member_id: uuid.UUID | None,
        actor: str,
        correct: bool,
        left: int | None,
        discipline_id: uuid.UUID,
    ) -> None:
        """The answer's ``task_attempts`` row (the answer sealed) and its
        ``attempt.created`` event (never the answer)."""
        sealer = write.keys(write.org_id).sealer
        self.attempts.append(
            {
                "organization_id": write.org_id,
                "id": new_id(),
                "team_id": write.team_id,
                "task_id": write.task_id,
                "member_id": member_id,
                "actor": actor,
                "at": self.now,
                "correct": correct,
                "answer": sealer.seal(write.answer, organization=write.org_id, purpose=SEALED_AS),
            }
        )
        if self.listened.get(write.org_id, True):
            summary = {
                "TeamId": write.team_id,
                "TaskId": write.task_id,
                "DisciplineId": discipline_id,
                "MemberId": member_id,
                "At": rfc3339(self.now),
                "Correct": correct,
                "AttemptsLeft": left,
            }
            body = orjson.dumps(summary)  # ids as the API writes them (orjson's UUIDs)
            self.events.append(event_row(write.org_id, "attempt.created", body))

    def _step(
        self, write: Write, team: TeamState, done: Done, kind: ScoreChange, at: dt.datetime
    ) -> tuple[schemas.Completion, bytes]:
        """``done`` completed or withdrawn (``kind``): the score's step, its history row
        and its outbox event queued; returns the completion with the new score, and its
        JSON."""
        completing = kind is ScoreChange.COMPLETED
        delta = done.points if completing else -done.points
        score = team.step(delta, 1 if completing else -1, at)
        task_id = task_of(write)
        self.history.append(
            history_row(
                org_id=write.org_id,
                team_id=write.team_id,
                task_id=task_id,
                discipline_id=done.discipline_id,
                kind=kind,
                delta=delta,
                score_after=score,
                at=at,
            )
        )
        completion = done.as_completion(write.team_id, task_id, score)
        body = schemas.COMPLETION_JSON.to_json(completion, by_alias=True)
        if self.listened.get(write.org_id, True):
            type = "progress.completed" if completing else "progress.withdrawn"
            self.events.append(event_row(write.org_id, type, body))
        self.written.append(write)
        if completing:
            self.completed += 1
        else:
            self.withdrawn += 1
        return completion, body

    def moved(self) -> dict[uuid.UUID, frozenset[str]]:
        """What the batch moves in each organization it bumps (``readmodel.moved``): the
        teams written to, and the scores wherever a step was made (a completion or a
        withdrawal); a counted answer alone moves its team (``AttemptsLeft``)."""
        found: dict[uuid.UUID, set[str]] = {}
        for write in self.written:
            found.setdefault(write.org_id, {moved.SCORES}).add(moved.team(write.team_id))
        for (org_id, _), team in self.teams.items():
            if team.steps:
                now = place_key(team.score, team.reached_at)
                found.setdefault(org_id, {moved.SCORES}).add(moved.step(team.place, now))
        for attempt in self.attempts:
            found.setdefault(attempt["organization_id"], set()).add(moved.team(attempt["team_id"]))
        return {org_id: frozenset(scopes) for org_id, scopes in found.items()}

    @property
    def changes_anything(self) -> bool:
        """Whether the batch writes anything (a step, or an answer counted)."""
        return bool(self.written or self.attempts)

    def changes(self) -> Changes:
        """The net result of every write decided."""
        added: list[dict[str, Any]] = []
        replaced: list[dict[str, Any]] = []
        removed: list[dict[str, Any]] = []
        tasks: dict[uuid.UUID, dict[str, Any]] = {}
        for (org_id, team_id, task_id), final in self.done.items():
            first = self.first_done[(org_id, team_id, task_id)]
            key = {"organization_id": org_id, "team_id": team_id, "task_id": task_id}
            if final is None:
                if first is not None:
                    removed.append(key)
                continue
            if final is first:
                continue
            row = {
                **key,
                "discipline_id": final.discipline_id,
                "points": final.points,
                "completed_at": final.completed_at,
                "member_id": final.member_id,
                "recorded_by": final.recorded_by,
            }
            (added if first is None else replaced).append(row)
            tasks[task_id] = {
                "id": task_id,
                "discipline_id": final.discipline_id,
                "points": final.points,
            }
        teams = [
            {
                "organization_id": org_id,
                "id": team_id,
                "seen": team.version,
                "score": team.score,
                "completed": team.completed,
                "steps": team.steps,
                "reached_at": team.reached_at,
            }
            for (org_id, team_id), team in self.teams.items()
            if team.steps
        ]
        return Changes(
            added=added,
            replaced=replaced,
            removed=removed,
            tasks=list(tasks.values()),
            teams=teams,
            history=self.history,
            events=self.events,
            attempts=self.attempts,
            organizations=sorted({write.org_id for write in self.written} | self.bumped),
        )


@dataclass(frozen=True, slots=True)
class Written:
    """A batch's outcomes (a refusal where nothing was written for a write) and what
    it changed."""

    outcomes: list[Outcome | Refused]
    versions: dict[uuid.UUID, int]
    """The version each organization of the batch was bumped to (none: nothing
    written)."""
    moved: dict[uuid.UUID, frozenset[str]]
    """What each of those versions moved (``Plan.moved``)."""
    completed: int
    withdrawn: int
    events: int
    """Outbox events recorded (none for organizations no consumer listens to)."""


def written(
    plan: Plan, outcomes: list[Outcome | Refused], versions: dict[uuid.UUID, int]
) -> Written:
    """The ``Written`` of a decided plan."""
    moved = plan.moved() if versions else {}
    return Written(outcomes, versions, moved, plan.completed, plan.withdrawn, len(plan.events))
