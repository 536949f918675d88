"""Members: the people of an organization, each in any number of its teams."""
