"""Every table of the application, imported once so that ``Base.metadata`` is complete.

The registry belongs to the application, not to ``storage``: storage is plumbing and
knows no domain. Who needs every table imports this module: the tests (to empty the
database) and whoever autogenerates a migration (``storage.migrate.alembic_config``'s
``metadata``). Serving needs no registry: the app imports every domain's routes, which
import their models.
"""

from questline.adjustments.models import ScoreAdjustment
from questline.audit.models import AuditEntry
from questline.auth.models import DashboardSession, SigninCode
from questline.auth.scim_tokens import ScimTokenRecord
from questline.disciplines.models import Discipline, Level, Quest, Resource, Task
from questline.events.models import Event
from questline.learners.models import HintUnlock, TaskAttempt
from questline.lti.models import (
    LtiDeepLink,
    LtiDeployment,
    LtiLineItem,
    LtiLoginState,
    LtiPerson,
    LtiPlatform,
    LtiScore,
    LtiToolKey,
)
from questline.mail.models import MailJob
from questline.members.models import Member, TeamMembership
from questline.organizations.models import Organization
from questline.progress.models import ScoreEvent, TaskCompletion
from questline.readmodel.models import ReadModelVersion
from questline.seasons.models import Season
from questline.sso.models import OidcLoginState, SsoConfiguration, SsoSession
from questline.storage.db import Base
from questline.submissions.models import Submission
from questline.teams.models import Team
from questline.web.idempotency import IdempotencyRecord
from questline.webhooks.models import Webhook, WebhookDelivery
from questline.xapi.models import LrsConnection, XapiStatement

__all__ = [
    "AuditEntry",
    "Base",
    "DashboardSession",
    "Discipline",
    "Event",
    "HintUnlock",
    "IdempotencyRecord",
    "Level",
    "LrsConnection",
    "LtiDeepLink",
    "LtiDeployment",
    "LtiLineItem",
    "LtiLoginState",
    "LtiPerson",
    "LtiPlatform",
    "LtiScore",
    "LtiToolKey",
    "MailJob",
    "Member",
    "OidcLoginState",
    "Organization",
    "Quest",
    "ReadModelVersion",
    "Resource",
    "ScimTokenRecord",
    "ScoreAdjustment",
    "ScoreEvent",
    "Season",
    "SigninCode",
    "SsoConfiguration",
    "SsoSession",
    "Submission",
    "Task",
    "TaskAttempt",
    "TaskCompletion",
    "Team",
    "TeamMembership",
    "Webhook",
    "WebhookDelivery",
    "XapiStatement",
]
