"""Approvals from Slack: a person's click on a notification's Approve or Deny button."""
