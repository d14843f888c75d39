print("mwctl")
