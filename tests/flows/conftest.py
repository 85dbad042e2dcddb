import pytest
from prefect.testing.utilities import prefect_test_harness


@pytest.fixture(scope="session")
def prefect_harness():
    """One throwaway Prefect server + database for the flow tests (not the user's ~/.prefect)."""
    with prefect_test_harness(server_startup_timeout=120):
        yield
