"""Gang placement and PodGroups (docs/gang.md): whole gangs bound at once, packed by GPU."""
