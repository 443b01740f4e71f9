/*
 * banned.h - libc calls this project does not use. Including this header
 * turns any use into a compile error. Use buf_* / snprintf instead.
 */
#ifndef AISD_BANNED_H
#define AISD_BANNED_H

#define BANNED(func) sorry_##func##_is_banned_in_aisd

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef gets
#define gets(x) BANNED(gets)
#undef atoi
#define atoi(x) BANNED(atoi)

#endif
