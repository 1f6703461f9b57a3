"""The repos app's models: accounts, repositories and pushes (core), imports and mirrors
(sources), what the object checks found (objects), the audit log (audit) and commit
statuses (statuses)."""

from repos.models.audit import AuditEntry
from repos.models.changes import CONFIRMED_KINDS, ChangeKind, RepositoryChange
from repos.models.core import (
    AccessToken,
    DailyTransfer,
    DeliveryStatus,
    HostsiteUserManager,
    Membership,
    Push,
    PushCommit,
    RefUpdate,
    Repository,
    RepositoryRedirect,
    Role,
    TokenScope,
    User,
    Visibility,
    Webhook,
    WebhookDelivery,
)
from repos.models.objects import LegacyObject, ObjectCheckOverride
from repos.models.sources import ImportState, Mirror, RefsMode, RepositoryImport
from repos.models.statuses import CommitStatus, StatusState

__all__ = [
    "CONFIRMED_KINDS",
    "AccessToken",
    "AuditEntry",
    "ChangeKind",
    "CommitStatus",
    "DailyTransfer",
    "DeliveryStatus",
    "HostsiteUserManager",
    "ImportState",
    "LegacyObject",
    "Membership",
    "Mirror",
    "ObjectCheckOverride",
    "Push",
    "PushCommit",
    "RefUpdate",
    "RefsMode",
    "Repository",
    "RepositoryChange",
    "RepositoryImport",
    "RepositoryRedirect",
    "Role",
    "StatusState",
    "TokenScope",
    "User",
    "Visibility",
    "Webhook",
    "WebhookDelivery",
]
