/* Preloaded into the VM's bluetoothd with MWGATE_VM_NO_DB_HASH=1 (docs/bluez-vm.md): refuses
 * AF_ALG sockets, so bluez's shared/crypto.c cannot open AES/CMAC and every GATT database
 * bluetoothd serves goes without a Database Hash (src/shared/gatt-db.c gatt_db_hash_support,
 * src/gatt-database.c populate_gatt_service), as a MetaWear's Nordic SoftDevice serves none.
 * The gateway's bluetoothd then rediscovers the board's primary services on every reconnect
 * (src/shared/gatt-client.c read_db_hash finds no hash in its cache -> discover_all), as it
 * does with a real board. btvirt, a process of its own, keeps its AF_ALG sockets. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>

int socket(int domain, int type, int protocol)
{
	static int (*real_socket)(int, int, int);

	if (domain == AF_ALG) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (!real_socket)
		real_socket = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	return real_socket(domain, type, protocol);
}
