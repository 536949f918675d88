"""The e-mail a submitter gets when an admin decides on the work (when this service
sends e-mail): through the mail domain's outbox, after the decision commits."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines.models import Task
from questline.mail import service as mail
from questline.members.models import Member
from questline.submissions.models import Submission, SubmissionState
from questline.teams.models import Team

PAGE = "#/my-team"
"""The learner's page of the dashboard, where the decision and the comment show."""


def wording(
    *, state: SubmissionState, task: str, team: str, comment: str | None
) -> tuple[str, str]:
    """The subject and text of the e-mail telling the submitter of the decision."""
    if state is SubmissionState.APPROVED:
        subject = f"Approved: {task}"
        text = f"Your work on \u201c{task}\u201d for {team} was approved; the task is complete."
    else:
        subject = f"Not yet: {task}"
        text = (
            f"Your work on \u201c{task}\u201d for {team} was sent back. "
            "Your team may submit it again."
        )
    if comment:
        text += f"\n\nThe reviewer's comment:\n\n{comment}"
    return subject, text


async def queue_decision(session: AsyncSession, *, submission: Submission, team: Team) -> None:
    """Queue the e-mail to the submitter (nothing when the member is gone)."""
    member = await session.scalar(
        select(Member).where(
            Member.organization_id == submission.organization_id,
            Member.id == submission.member_id,
        )
    )
    if member is None:
        return
    title = await session.scalar(select(Task.title).where(Task.id == submission.task_id))
    subject, text = wording(
        state=submission.state, task=title or "a task", team=team.name, comment=submission.comment
    )
    await mail.queue_notice(
        session,
        org_id=submission.organization_id,
        member=member,
        subject=subject,
        text=text,
        path=PAGE,
    )
