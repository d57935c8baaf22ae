"""The App Runtime: the app registry, one active app task per connection, priorities, mode routing."""
