"""The SMAC package's public names load on first use: the maps' names without numba, torch or gymnasium."""

import subprocess
import sys

import selfplay.envs.smac as smac


def test_reading_the_map_names_loads_no_engine():
    code = ("import sys; from selfplay.envs.smac import MAP_NAMES, get_map; get_map(MAP_NAMES[0]); "
            "print(','.join(m for m in ('numba', 'torch', 'gymnasium') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == ""


def test_every_public_name_resolves_to_its_module_object():
    from selfplay.envs.smac.env import SMACEnv
    from selfplay.envs.smac.smacv2_scenarios import SCENARIO_NAMES

    for name in smac.__all__:
        assert getattr(smac, name) is not None, name
    assert smac.StarCraft2Env is SMACEnv  # SMAC's name for the one-game env
    assert smac.SMACV2_SCENARIOS is SCENARIO_NAMES
    assert set(smac.__all__) <= set(dir(smac))


def test_an_unknown_name_is_an_attribute_error():
    try:
        smac.not_a_name
    except AttributeError as err:
        assert "not_a_name" in str(err)
    else:
        raise AssertionError("an unknown name resolved")
