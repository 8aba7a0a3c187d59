"""The mapping space of one (architecture, layer): sampling, encoding, constraints."""
