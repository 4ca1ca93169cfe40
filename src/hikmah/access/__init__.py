"""Who is asking: an agent session or a person, the person's presence, and the person's
signature."""
