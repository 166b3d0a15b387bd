//! ctxtrim core (placeholder, being written)
