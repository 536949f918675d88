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
from dataclasses import dataclass, field
from typing import Any

from questline.progress import schemas
from questline.progress.models import ScoreChange
from questline.storage.db import new_id
from questline.teams.models import TeamStatus
from questline.web.errors import Conflict, FieldError, Problem, Unprocessable, not_found

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


Write = Completing | Withdrawing


def task_of(write: Write) -> uuid.UUID:
    return write.data.task_id if isinstance(write, Completing) else write.task_id


@dataclass(frozen=True, slots=True)
class Recorded:
    completion: schemas.Completion
    """With ``score``: the team's score after the request."""
    created: bool
    body: bytes | None = None
    """The completion's JSON as the API writes it, when already made (once for the
    outbox event and the response)."""


Outcome = Recorded | schemas.Completion
"""What a write did: ``Recorded`` (completed, or found done), or the withdrawn
``Completion`` with the team's new score."""


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


def event_row(org_id: uuid.UUID, completing: bool, body: bytes) -> dict[str, Any]:
    """The outbox event of a completion or withdrawal: its payload is the completion's
    JSON as the API answers it (with the new score)."""
    return {
        "organization_id": org_id,
        "id": new_id(),
        "type": "progress.completed" if completing else "progress.withdrawn",
        "payload": body.decode(),
    }


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
    history: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    written: list[Write] = field(default_factory=list)

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

    def decide(self, position: int, write: Write) -> Outcome | Refused:
        """The write's outcome, or its refusal in the order the API always gave them:
        404 team, 409 archived team, then for a completion 404 task and 422 (a future
        ``CompletedAt``, a ``MemberId`` not of the team), for a withdrawal 404
        completion. A repeated completion
        changes nothing; only the write that adds a completion changes the score."""
        team = self.teams.get((write.org_id, write.team_id))
        if team is None:
            return not_found("team")
        if team.status != TeamStatus.ACTIVE.value:
            return Conflict("The team is archived and refuses progress; make it Active first.")
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
            self.events.append(event_row(write.org_id, completing, body))
        self.written.append(write)
        return completion, body

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
            organizations=sorted({write.org_id for write in self.written}),
        )


@dataclass(frozen=True, slots=True)
class Written:
    """A batch's outcomes (a refusal where nothing was written for a write) and what
    it changed."""

    outcomes: list[Outcome | Refused]
    versions: dict[uuid.UUID, int]
    """The version each organization of the batch was bumped to (none: nothing
    written)."""
    completed: int
    withdrawn: int
    events: int
    """Outbox events recorded (none for organizations no consumer listens to)."""


def written(
    plan: Plan, outcomes: list[Outcome | Refused], versions: dict[uuid.UUID, int]
) -> Written:
    """The ``Written`` of a decided plan."""
    completed = sum(isinstance(w, Completing) for w in plan.written)
    return Written(outcomes, versions, completed, len(plan.written) - completed, len(plan.events))
