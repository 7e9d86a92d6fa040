"""Make ``apartments.csv``, the listings notebook 15 analyses.

The data are made up, with a fixed seed and the standard library only, so the file is the same
on every machine: 360 flats for sale in five cities, with the gaps real listings have. Prices are
missing for about one listing in twelve, almost all of them from one agency ("Casa Alta", whose
listings say "price on request"); the year built is missing for about one in ten, and the energy
label for about one in six.

    python -m agentnb.datasets.make_apartments   # writes apartments.csv next to this file
"""

from __future__ import annotations

import csv
import datetime
import random
from pathlib import Path

ROWS = 360
#: city: (price per m2 in EUR, its districts)
CITIES = {
    "Lisbon": (5200, ["Alfama", "Baixa", "Belem", "Campo de Ourique", "Parque das Nacoes"]),
    "Porto": (3500, ["Boavista", "Cedofeita", "Foz do Douro", "Ribeira"]),
    "Madrid": (4800, ["Chamberi", "Lavapies", "Retiro", "Salamanca", "Tetuan"]),
    "Valencia": (2600, ["Benimaclet", "El Carmen", "Ruzafa"]),
    "Lyon": (4600, ["Confluence", "Croix-Rousse", "Part-Dieu", "Vieux Lyon"]),
}
AGENCIES = ["Casa Alta", "Habitat Plus", "Keyhouse", "Metro Homes", "Solar Realty"]
LABELS = "ABCDEFG"


def listing(rng: random.Random, number: int) -> dict[str, object]:
    """One listing: its columns, some of them missing."""
    city = rng.choice(list(CITIES))
    per_m2, districts = CITIES[city]
    rooms = rng.choices([1, 2, 3, 4, 5], weights=[18, 34, 28, 14, 6])[0]
    area = round(rng.uniform(22, 34) * rooms + rng.uniform(5, 20))
    year = rng.randint(1890, 2023)
    agency = rng.choice(AGENCIES)
    newer = 1.0 + max(0, year - 1990) / 150
    price = round(area * per_m2 * newer * rng.uniform(0.8, 1.25), -3)
    on_request = rng.random() < (0.35 if agency == "Casa Alta" else 0.01)
    label = LABELS[min(6, max(0, int((2030 - year) / 22 + rng.uniform(-1, 1))))]
    listed = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 365))
    return {
        "listing_id": f"L{number:04d}",
        "city": city,
        "district": rng.choice(districts),
        "rooms": rooms,
        "area_m2": area,
        "floor": rng.randint(0, 9),
        "year_built": "" if rng.random() < 0.1 else year,
        "price_eur": "" if on_request else int(price),
        "energy_label": "" if rng.random() < 0.16 else label,
        "agency": agency,
        "listed_on": listed.isoformat(),
    }


def main() -> None:
    rng = random.Random(15)
    rows = [listing(rng, n) for n in range(1, ROWS + 1)]
    path = Path(__file__).with_name("apartments.csv")
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{path.name}: {len(rows)} rows, {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
