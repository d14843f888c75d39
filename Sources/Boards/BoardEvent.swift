import BlueZ
