"""Pure decisions: functions of observed state, policy and `now` that return values with reasons."""
