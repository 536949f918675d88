"""E-mail: sign-in links and invitations, sent through a transactional outbox over SMTP.

``service`` queues a message in the caller's transaction (a rolled-back change queues
nothing; a committed one waits in ``mail_outbox`` until it is sent, across restarts);
``dispatcher`` sends the queued messages from every server process, with retries;
``smtp`` speaks to the configured server (aiosmtplib) and ``messages`` builds the
messages (the standard ``email`` package). docs/identity.md tells the whole story.
"""
