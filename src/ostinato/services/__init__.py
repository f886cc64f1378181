"""Services: the loops of Ostinato, thin over the domain rules and the store."""
