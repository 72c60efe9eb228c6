"""Gang placement and PodGroups (DESIGN.md 7.2): whole gangs bound at once, packed by GPU."""
