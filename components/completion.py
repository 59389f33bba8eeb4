"""The completion watcher's provider under the import path of earlier stacks.

Pulumi stores each dynamic resource's provider pickled by reference (module and class name)
and unpickles that stored copy to refresh or delete the resource, so the old path must keep
importing for as long as such stacks exist.
"""

from trainjobs.deploy.completion import JobCompletionProvider

__all__ = ["JobCompletionProvider"]
