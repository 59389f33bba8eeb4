"""The trainjobs component provider's entry point (the Pulumi CLI runs it as a plugin)."""

from pulumi.provider.experimental import component_provider_host

from trainjobs.deploy.provider import COMPONENTS, PACKAGE, VERSION

if __name__ == "__main__":
    component_provider_host(COMPONENTS, PACKAGE, version=VERSION)
