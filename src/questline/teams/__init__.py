"""Teams: groups of members that progress through disciplines together."""
